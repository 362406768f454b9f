"""The rest of a charge's life in the fake: capture, metadata update, refunds, cancels, 3-D Secure.

The rules (``docs/payment-lifecycle.md`` says where each comes from):

- capture: only an ``authorized`` charge, at most the authorized amount, in its
  currency; an expired authorization fails the charge with error 313;
- refund: only a ``successful`` charge, never konbini or bank transfer, in the
  charged currency; refunds (pending or successful) add up to at most the
  charged amount;
- cancel: a ``pending``, ``awaiting`` or ``authorized`` charge, or a
  ``successful`` card or wallet charge without refunds; one cancel at a time;
- refunds and cancels answer ``pending`` and finish right after (or after
  ``processing_delay``), sending ``refund_finished`` / ``cancel_finished``.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from ..client.vocabulary import (
    CANCEL_EVENT,
    NON_REFUNDABLE_PAYMENT_TYPES,
    REFUND_EVENT,
    REFUND_REASONS,
)
from ._common import CARD_THREE_DS, ApiError, Json, now, validation_error
from .lifecycle_records import CancelRecord, RefundRecord
from .listing import micros, paginate, parse_page_query
from .records import AppToken, Charge, Store
from .validation import _flat_object, _is_int

#: Statuses a charge can be canceled in (``successful`` only for card and wallet charges).
_CANCELABLE = frozenset({"pending", "awaiting", "authorized"})
_SETTLED_TYPES = NON_REFUNDABLE_PAYMENT_TYPES  # paid at a store or bank: no cancel either
_COUNTED = ("pending", "successful")  # refunds that use up the charged amount


def _error(code: int, message: str) -> Json:
    return {"code": code, "message": message, "detail": message}


def needs_three_ds_challenge(charge: Charge) -> bool:
    """Whether a new card charge waits for the customer's 3-D Secure challenge.

    Every fake card supports 3-D Secure; ordinary numbers pass it without a
    challenge (risk-based), :data:`CARD_THREE_DS` always asks for one. The
    modes then do what the spec says: ``skip`` never runs it, ``force`` always
    challenges, ``require`` runs it even when the token already passed it, and
    ``normal`` (the default, and the newer ``if_available``/``provided``) runs
    it only when the token has not passed it.
    """
    mode = (charge.three_ds or {}).get("mode") or "normal"
    if mode == "skip":
        return False
    if mode == "force":
        return True
    challenge_card = charge.token.card_number == CARD_THREE_DS
    if mode == "require":
        return challenge_card
    token_passed = (charge.token.data.get("three_ds") or {}).get("status") == "successful"
    return challenge_card and not token_passed


class LifecycleMixin:
    """Capture, update, refunds, cancels and 3-D Secure on :class:`FakeState`."""

    lock: threading.RLock
    processing_delay: float
    sender: Any
    get_charge: Callable[[AppToken, str, str], Charge]
    charge: Callable[[str], Charge]
    record_deliveries: Callable[[Store, list[str], Json], list[Any]]
    _set_status: Callable[..., list[Any]]
    card_outcome: Callable[[Charge], list[Any]]

    def reset_lifecycle(self) -> None:
        """Forget every refund and cancel (called by ``reset``)."""
        self.refunds: dict[str, RefundRecord] = {}
        self.cancels: dict[str, CancelRecord] = {}
        self.charge_refunds: defaultdict[str, list[str]] = defaultdict(list)
        self.charge_cancels: defaultdict[str, list[str]] = defaultdict(list)

    # -- capture and metadata --------------------------------------------------------------

    def capture(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``POST .../capture``: ``{}`` (the SDK's answer); the charge is then ``successful``."""
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            amount, currency = body.get("amount"), body.get("currency")
            errors: list[tuple[str, str]] = []
            if amount is not None and (not _is_int(amount) or not 0 < amount <= charge.amount):
                errors.append(("amount", "MUST_BE_AT_MOST_AUTHORIZED_AMOUNT"))
            if currency is not None and str(currency).upper() != charge.currency:
                errors.append(("currency", "CURRENCY_MISMATCH"))
            if errors:
                raise validation_error(errors)
            if charge.status != "authorized":
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            if charge.authorization_expired:
                error = _error(313, "authorization expired")
                deliveries = self._set_status(charge, "failed", error=error)
            else:
                charge.captured_amount = int(amount) if amount is not None else None
                deliveries = self._set_status(charge, "successful", charged=True)
        self.sender.send(deliveries)
        return {}

    def expire_authorization(self, charge_id: str) -> Json:
        """Test control: the authorization lapses; the next capture fails (error 313)."""
        charge = self.charge(charge_id)
        with self.lock:
            if charge.status != "authorized":
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            charge.authorization_expired = True
            return charge.to_json()

    def update_charge(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``PATCH .../charges/{id}``: metadata keys are added or changed; answers the charge."""
        metadata = body.get("metadata")
        if not isinstance(metadata, dict) or not _flat_object(metadata):
            raise validation_error([("metadata", "MUST_BE_FLAT_OBJECT")])
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
        reason, message = body.get("reason"), body.get("message")
        metadata = body.get("metadata") or {}
        errors = _money_errors(body)
        if reason is not None and reason not in REFUND_REASONS:
            errors.append(("reason", "INVALID_ENUM_VALUE"))
        if message is not None and not isinstance(message, str):
            errors.append(("message", "MUST_BE_STRING"))
        if not _flat_object(metadata):
            errors.append(("metadata", "MUST_BE_FLAT_OBJECT"))
        if errors:
            raise validation_error(errors)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            if charge.token.payment_type in NON_REFUNDABLE_PAYMENT_TYPES:
                raise ApiError(409, "REFUND_NOT_SUPPORTED", [("payment_type", "NOT_REFUNDABLE")])
            if charge.status != "successful":
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            if str(body["currency"]).upper() != charge.currency:
                raise validation_error([("currency", "CURRENCY_MISMATCH")])
            if int(body["amount"]) > self.refundable(charge):
                raise validation_error([("amount", "REFUND_EXCEEDS_CHARGED_AMOUNT")])
            refund = RefundRecord(
                str(uuid.uuid4()),
                charge,
                int(body["amount"]),
                charge.currency,
                now(),
                reason=reason,
                message=message,
                metadata=dict(metadata),
            )
            self.refunds[refund.id] = refund
            self.charge_refunds[charge.id].append(refund.id)
            return refund.to_json()

    def refundable(self, charge: Charge) -> int:
        """What is left to refund: the charged amount less pending and successful refunds."""
        charged = (charge.captured_amount or charge.amount) if charge.charged else 0
        used = sum(
            self.refunds[r].amount
            for r in self.charge_refunds.get(charge.id, ())
            if self.refunds[r].status in _COUNTED
        )
        return charged - used

    def finish_refund(self, refund_id: str, *, error: Json | None = None) -> Json:
        """A pending refund ends ``successful`` (or ``failed`` with ``error``); 409 if it ended."""
        with self.lock:
            refund = self.refunds.get(refund_id)
            if refund is None:
                raise ApiError(404, "RESOURCE_NOT_FOUND", [("refundId", "NOT_FOUND")])
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
        return self.finish_refund(refund_id, error=_error(329, "refund failed"))

    # -- cancels ---------------------------------------------------------------------------

    def create_cancel(self, app: AppToken, store_id: str, charge_id: str, body: Json) -> Json:
        """``POST .../cancels``: answers the ``pending`` cancel of a cancelable charge."""
        metadata = body.get("metadata") or {}
        if not _flat_object(metadata):
            raise validation_error([("metadata", "MUST_BE_FLAT_OBJECT")])
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            settled = charge.status == "successful"
            if settled and charge.token.payment_type in _SETTLED_TYPES:
                raise ApiError(409, "CANCEL_NOT_SUPPORTED", [("payment_type", "ALREADY_PAID")])
            if settled and self.charge_refunds.get(charge.id):
                raise ApiError(409, "CHARGE_HAS_REFUNDS", [("chargeId", "REFUNDED")])
            if charge.status not in _CANCELABLE and not settled:
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            if any(self.cancels[c].status == "pending" for c in self.charge_cancels[charge.id]):
                raise ApiError(409, "CANCEL_IN_PROGRESS", [("chargeId", "CANCEL_PENDING")])
            cancel = CancelRecord(str(uuid.uuid4()), charge, now(), metadata=dict(metadata))
            self.cancels[cancel.id] = cancel
            self.charge_cancels[charge.id].append(cancel.id)
            return cancel.to_json()

    def finish_cancel(self, cancel_id: str) -> None:
        """A pending cancel succeeds: the charge becomes ``canceled``, then ``cancel_finished``."""
        with self.lock:
            cancel = self.cancels.get(cancel_id)
            if cancel is None or cancel.status != "pending":
                return
            deliveries: list[Any] = []
            if cancel.charge.status in ("successful", *_CANCELABLE):
                cancel.status = "successful"
                deliveries += self._set_status(cancel.charge, "canceled")
            else:  # the charge ended some other way meanwhile
                cancel.status = "failed"
                cancel.error = _error(312, "this charge cannot be canceled")
            cancel.updated = now()
            data = cancel.to_json()
            deliveries += self.record_deliveries(cancel.charge.store, [CANCEL_EVENT], data)
        self.sender.send(deliveries)

    # -- reads -----------------------------------------------------------------------------

    def get_child(self, app: AppToken, store_id: str, charge_id: str, kind: str, item: str) -> Json:
        """One refund (``kind="refunds"``) or cancel of a charge the credentials reach."""
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            records: Mapping[str, RefundRecord | CancelRecord] = (
                self.refunds if kind == "refunds" else self.cancels
            )
            found = records.get(item)
            if found is None or found.charge.id != charge.id:
                raise ApiError(404, "RESOURCE_NOT_FOUND", [("id", "NOT_FOUND")])
            return found.to_json()

    def list_children(
        self, app: AppToken, store_id: str, charge_id: str, kind: str, query: Mapping[str, str]
    ) -> Json:
        """The paginated refunds or cancels of a charge, newest first by default."""
        page = parse_page_query(query)
        with self.lock:
            charge = self.get_charge(app, store_id, charge_id)
            if kind == "refunds":
                mine: dict[str, Any] = {i: self.refunds[i] for i in self.charge_refunds[charge.id]}
            else:
                mine = {i: self.cancels[i] for i in self.charge_cancels[charge.id]}
            keys = sorted((micros(r.created), r.id) for r in mine.values())

            def cursor_key(item_id: str) -> tuple[int, str] | None:
                r = mine.get(item_id)
                return (micros(r.created), r.id) if r is not None else None

            result = paginate(keys, page, cursor_key)
            return {"items": [mine[i].to_json() for i in result.ids], "has_more": result.has_more}

    # -- processing ------------------------------------------------------------------------

    def after(self, work: Callable[[str], Any], item_id: str) -> None:
        """Run ``work(item_id)`` now, or after ``processing_delay`` on a timer thread."""
        if self.processing_delay <= 0:
            work(item_id)
            return
        timer = threading.Timer(self.processing_delay, work, (item_id,))
        timer.daemon = True
        timer.start()

    # -- 3-D Secure ------------------------------------------------------------------------

    def finish_three_ds(self, charge_id: str, *, passed: bool) -> Charge:
        """The customer's challenge ends: the card is charged as usual, or fails (error 358)."""
        charge = self.charge(charge_id)
        with self.lock:
            if charge.status != "awaiting" or not charge.three_ds_challenge:
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            charge.three_ds_challenge = False
            if passed:
                deliveries = self.card_outcome(charge)
            else:
                error = _error(358, "3-D Secure authentication failed")
                deliveries = self._set_status(charge, "failed", error=error)
        self.sender.send(deliveries)
        return charge


def _money_errors(body: Json) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    amount = body.get("amount")
    if not _is_int(amount) or amount <= 0:
        errors.append(("amount", "MUST_BE_POSITIVE_INTEGER"))
    currency = body.get("currency")
    if not isinstance(currency, str) or len(currency) != 3:
        errors.append(("currency", "INVALID_FORMAT_CURRENCY"))
    return errors
