"""The fake's rules for a charge's later life: capture, metadata update, refunds, cancels.

A mixin of :class:`~django_paycharge.testing.state.FakeState` (the same lock,
records and deliveries). Wrong requests are answered as the gateway documents
them (the official SDKs' error table; the codes come from
:mod:`django_paycharge.client.vocabulary`), each a 400:

- capture: ``ALREADY_CAPTURED`` unless the charge is ``authorized`` (the code
  also covers an authorization not yet complete; a canceled or failed charge
  is a ``VALIDATION_ERROR`` whose reason is ``INVALID_CHARGE_STATUS``),
  ``CURRENCY_MUST_MATCH_CHARGE``, ``CAPTURE_AMOUNT_TOO_LARGE``; an expired
  authorization fails the charge with error 313;
- refund: ``REFUND_NOT_ALLOWED`` (konbini, bank transfer),
  ``CANNOT_REFUND_UNSUCCESSFUL_CHARGE``, ``CURRENCY_MUST_MATCH_CHARGE``,
  ``REFUND_EXCEEDS_CHARGE_AMOUNT`` (one refund above the charged amount),
  ``REFUND_NOT_WITHIN_BOUNDS`` (partial refunds that would add up beyond it:
  refunds pending or successful add up to at most the charged amount);
- cancel: ``CANCEL_NOT_ALLOWED`` for a charge paid at a store or a bank, a
  refunded one, a final one, or while another cancel is pending.

Refunds and cancels answer ``pending`` and finish right after (or after
``processing_delay``), sending ``refund_finished`` / ``cancel_finished``.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..client.vocabulary import (
    ALREADY_CAPTURED,
    CANCEL_EVENT,
    CANCEL_NOT_ALLOWED,
    CANCELABLE_STATUSES,
    CANNOT_REFUND_UNSUCCESSFUL_CHARGE,
    CAPTURE_AMOUNT_TOO_LARGE,
    CURRENCY_MUST_MATCH_CHARGE,
    INVALID_CHARGE_STATUS,
    NON_REFUNDABLE_PAYMENT_TYPES,
    NOT_FOUND,
    REFUND_EVENT,
    REFUND_EXCEEDS_CHARGE_AMOUNT,
    REFUND_NOT_ALLOWED,
    REFUND_NOT_WITHIN_BOUNDS,
)
from .basics import ApiError, Json, failure, now, validation_error
from .listing import page_of, parse_page_query
from .records import AppToken, CancelRecord, Charge, Delivery, RefundRecord, Store
from .validation import parse_capture, parse_metadata, parse_refund

if TYPE_CHECKING:
    from .webhook_sender import WebhookSender

_REFUND_USES = ("pending", "successful")  # refunds that use up the charged amount
#: Statuses in which a capture is refused as ``ALREADY_CAPTURED``: captured, or not yet authorized.
_CAPTURED_OR_INCOMPLETE = frozenset({"successful", "pending", "awaiting"})


class LifecycleRules:
    """Capture, metadata update, refunds and cancels of :class:`FakeState`."""

    lock: threading.RLock
    sender: WebhookSender
    refunds: dict[str, RefundRecord]
    cancels: dict[str, CancelRecord]
    charge_refunds: defaultdict[str, list[str]]
    charge_cancels: defaultdict[str, list[str]]

    if TYPE_CHECKING:  # defined by FakeState

        def get_charge(self, app: AppToken, store_id: str, charge_id: str) -> Charge: ...
        def charge(self, charge_id: str) -> Charge: ...
        def _set_status(
            self, charge: Charge, status: str, *, charged: bool = False, error: Json | None = None
        ) -> list[Delivery]: ...
        def record_deliveries(
            self, store: Store, events: list[str], data: Json
        ) -> list[Delivery]: ...

    # -- capture and metadata --------------------------------------------------------------

    def capture(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``POST .../capture``: ``{}`` (the SDK's answer); the charge is then ``successful``."""
        amount, currency = parse_capture(body)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            if charge.status in _CAPTURED_OR_INCOMPLETE:
                raise ApiError(400, ALREADY_CAPTURED, [("status", charge.status)])
            if charge.status != "authorized":
                raise validation_error([("status", INVALID_CHARGE_STATUS)])
            if currency is not None and currency != charge.currency:
                raise ApiError(400, CURRENCY_MUST_MATCH_CHARGE, [("currency", currency)])
            if amount is not None and amount > charge.amount:
                raise ApiError(400, CAPTURE_AMOUNT_TOO_LARGE, [("amount", str(amount))])
            if charge.authorization_expired:
                error = failure(313, "authorization expired")
                deliveries = self._set_status(charge, "failed", error=error)
            else:
                charge.captured_amount = amount
                deliveries = self._set_status(charge, "successful", charged=True)
        self.sender.send(deliveries)
        return {}

    def expire_authorization(self, charge_id: str) -> Json:
        """Test control: the authorization lapses; the next capture fails (error 313)."""
        charge = self.charge(charge_id)
        with self.lock:
            if charge.status != "authorized":
                raise ApiError(409, INVALID_CHARGE_STATUS, [("status", charge.status)])
            charge.authorization_expired = True
            return charge.to_json()

    def update_charge(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``PATCH .../charges/{id}``: metadata keys are added or changed; answers the charge."""
        metadata = parse_metadata(body, required=True)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            charge.metadata = {**charge.metadata, **metadata}
            data = charge.to_json()
            deliveries = self.record_deliveries(charge.store, ["charge_updated"], data)
        self.sender.send(deliveries)
        return data

    # -- refunds ---------------------------------------------------------------------------

    def create_refund(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``POST .../refunds``: checks the rules, answers the ``pending`` refund."""
        request = parse_refund(body)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            payment_type = charge.token.payment_type
            if payment_type in NON_REFUNDABLE_PAYMENT_TYPES:
                raise ApiError(400, REFUND_NOT_ALLOWED, [("payment_type", payment_type)])
            if charge.status != "successful":
                raise ApiError(400, CANNOT_REFUND_UNSUCCESSFUL_CHARGE, [("status", charge.status)])
            if request.currency != charge.currency:
                raise ApiError(400, CURRENCY_MUST_MATCH_CHARGE, [("currency", request.currency)])
            if request.amount > self.charged(charge):
                raise ApiError(400, REFUND_EXCEEDS_CHARGE_AMOUNT, [("amount", str(request.amount))])
            if request.amount > self.refundable(charge):
                raise ApiError(400, REFUND_NOT_WITHIN_BOUNDS, [("amount", str(request.amount))])
            refund = RefundRecord(
                id=str(uuid.uuid4()),
                charge=charge,
                created=now(),
                amount=request.amount,
                currency=charge.currency,
                reason=request.reason,
                message=request.message,
                metadata=request.metadata,
            )
            self.refunds[refund.id] = refund
            self.charge_refunds[charge.id].append(refund.id)
            return refund.to_json()

    @staticmethod
    def charged(charge: Charge) -> int:
        """The charged amount: what was captured, or the whole amount."""
        return (charge.captured_amount or charge.amount) if charge.charged else 0

    def refundable(self, charge: Charge) -> int:
        """What is left to refund: the charged amount less pending and successful refunds."""
        refunds = (self.refunds[r] for r in self.charge_refunds.get(charge.id, ()))
        return self.charged(charge) - sum(r.amount for r in refunds if r.status in _REFUND_USES)

    def finish_refund(self, refund_id: str, *, error: Json | None = None) -> Json:
        """A pending refund ends ``successful`` (or ``failed`` with ``error``); 409 if it ended."""
        with self.lock:
            refund = self.refunds.get(refund_id)
            if refund is None:
                raise ApiError(404, NOT_FOUND, [("refundId", "NOT_FOUND")])
            if refund.status != "pending":
                raise ApiError(409, "INVALID_REFUND_STATUS", [("status", refund.status)])
            refund.status = "failed" if error else "successful"
            refund.error = error
            refund.updated = now()
            data = refund.to_json()
            deliveries = self.record_deliveries(refund.charge.store, [REFUND_EVENT], data)
        self.sender.send(deliveries)
        return data

    def process_refund(self, refund_id: str) -> None:
        """The gateway finishes a refund it accepted (a no-op once it has ended)."""
        with contextlib.suppress(ApiError):  # failed by a test control meanwhile
            self.finish_refund(refund_id)

    def fail_refund(self, refund_id: str) -> Json:
        """Test control: a pending refund fails (error 329)."""
        return self.finish_refund(refund_id, error=failure(329, "refund failed"))

    # -- cancels ---------------------------------------------------------------------------

    def create_cancel(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``POST .../cancels``: answers the ``pending`` cancel of a cancelable charge."""
        metadata = parse_metadata(body)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            self._check_cancelable(charge)
            cancel = CancelRecord(
                id=str(uuid.uuid4()), charge=charge, created=now(), metadata=metadata
            )
            self.cancels[cancel.id] = cancel
            self.charge_cancels[charge.id].append(cancel.id)
            return cancel.to_json()

    def _check_cancelable(self, charge: Charge) -> None:
        """400 ``CANCEL_NOT_ALLOWED`` (the reason says why) unless the charge can be canceled."""
        why: tuple[str, str] | None = None
        if charge.status == "successful":
            if charge.token.payment_type in NON_REFUNDABLE_PAYMENT_TYPES:
                why = ("payment_type", charge.token.payment_type)  # paid at a store or a bank
            elif self.charge_refunds.get(charge.id):
                why = ("refunds", "EXIST")
        elif charge.status not in CANCELABLE_STATUSES:
            why = ("status", charge.status)
        if why is None and any(
            self.cancels[c].status == "pending" for c in self.charge_cancels[charge.id]
        ):
            why = ("cancels", "PENDING")
        if why is not None:
            raise ApiError(400, CANCEL_NOT_ALLOWED, [why])

    def finish_cancel(self, cancel_id: str) -> None:
        """A pending cancel succeeds: the charge becomes ``canceled``, then ``cancel_finished``."""
        with self.lock:
            cancel = self.cancels.get(cancel_id)
            if cancel is None or cancel.status != "pending":
                return
            deliveries: list[Delivery] = []
            if cancel.charge.status in CANCELABLE_STATUSES:
                cancel.status = "successful"
                deliveries += self._set_status(cancel.charge, "canceled")
            else:  # the charge ended some other way meanwhile
                cancel.status = "failed"
                cancel.error = failure(312, "this charge cannot be canceled")
            cancel.updated = now()
            data = cancel.to_json()
            deliveries += self.record_deliveries(cancel.charge.store, [CANCEL_EVENT], data)
        self.sender.send(deliveries)

    # -- reading them ----------------------------------------------------------------------

    def get_operation(
        self, app: AppToken, store_id: str, charge_id: str, kind: str, item: str
    ) -> Json:
        """One refund (``kind="refunds"``) or cancel of a charge the credentials reach."""
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            found = self._operations(kind).get(item)
            if found is None or found.charge.id != charge.id:
                raise ApiError(404, NOT_FOUND, [("id", "NOT_FOUND")])
            return found.to_json()

    def list_operations(
        self, app: AppToken, store_id: str, charge_id: str, kind: str, query: Mapping[str, str]
    ) -> Json:
        """The paginated refunds (``kind="refunds"``) or cancels of a charge, newest first."""
        page = parse_page_query(query)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            ids = (self.charge_refunds if kind == "refunds" else self.charge_cancels)[charge.id]
            records = self._operations(kind)
            return page_of({i: records[i] for i in ids}, page)

    def _operations(self, kind: str) -> Mapping[str, RefundRecord | CancelRecord]:
        return self.refunds if kind == "refunds" else self.cancels
