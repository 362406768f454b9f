"""Capture an authorization exactly once: the capture kind of the exactly-once machine."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import router, transaction
from django.utils.translation import gettext

from ... import outbox, signals
from ...client.lifecycle_params import capture_body, check_fields
from ...client.vocabulary import ALREADY_CAPTURED, UNPAID_FINAL_STATUSES
from ...exceptions import ChargeStateError, FieldError, InvalidParametersError
from ...models import Charge, ChargeActionRequest
from ..clients import get_client
from ..mirror import store_of
from .request_rows import succeed
from .requests import LifecycleKind, act, reread


class CaptureKind(LifecycleKind):
    """``POST .../capture`` with the request's key; the result is the charge, read again."""

    name = "capture"
    blocked_by = frozenset({"capture", "cancel", "refund"})
    # After a lost answer, ALREADY_CAPTURED means the capture happened: read to be sure.
    done_before_codes = frozenset({ALREADY_CAPTURED})
    status_codes = frozenset({ALREADY_CAPTURED})

    def prepare(self, charge: Charge, given: dict[str, Any]) -> dict[str, Any]:
        if charge.status != "authorized":
            raise self.state_error(charge.status)
        if "amount" in given:
            given.setdefault("currency", charge.requested_currency)
        params = capture_body(**given) or {}
        authorized = charge.requested_amount
        if authorized is not None and params.get("amount", 0) > authorized:
            reason = gettext("must be at most the authorized amount, %(n)d") % {"n": authorized}
            raise InvalidParametersError(errors=[FieldError("amount", reason)])
        return params

    def state_error(self, status: str | None) -> ChargeStateError:
        message = gettext("Only an authorized charge can be captured; its status is %(s)s.")
        return ChargeStateError(message % {"s": status or gettext("unknown")}, status=status)

    def send(self, request: ChargeActionRequest) -> Charge:
        charge = request.charge
        get_client(request.account).charges.capture(
            store_of(charge),
            charge.gateway_id,
            **request.params,
            idempotency_key=request.idempotency_key,
        )
        # The answer does not hold the charge (often it is empty): the charge is read again.
        return self._captured(request, reread(charge))

    def find(self, request: ChargeActionRequest) -> Charge | None:
        fresh = reread(request.charge)
        wanted = request.params.get("amount") or fresh.requested_amount
        if fresh.status != "successful" or fresh.charged_amount not in (None, wanted):
            return None
        return self._captured(request, fresh)

    def _captured(self, request: ChargeActionRequest, fresh: Charge) -> Charge:
        """Done: the request succeeded (``charge_captured`` once), unless the charge failed."""
        if fresh.status in UNPAID_FINAL_STATUSES:
            # Accepted, then failed: an expired authorization (313) ends here, for good.
            error = fresh.error if isinstance(fresh.error, dict) else {}
            detail = str(error.get("message") or error.get("detail") or fresh.status)
            failed = ChargeStateError(
                gettext("The capture failed: %(reason)s.") % {"reason": detail},
                status=fresh.status,
            )
            failed.outcome = "refused"
            raise failed
        alias = router.db_for_write(Charge)  # where refresh_charge stored ``fresh``
        with transaction.atomic(using=alias):
            if succeed(request):
                outbox.send(
                    signals.charge_captured,
                    sender=Charge,
                    using=alias,
                    charge=fresh,
                    amount=request.params.get("amount"),
                )
        return fresh


CAPTURE = CaptureKind()


def capture_charge(
    charge: Charge,
    *,
    amount: int | None = None,
    currency: str | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Charge:
    """Capture an ``authorized`` charge (all of it, or ``amount`` of it) exactly once.

    Returns the charge as read right after. If the authorization has expired,
    the gateway fails the charge (error 313) and :class:`ChargeStateError`
    says so; a charge that is not ``authorized`` (canceled, already captured)
    is refused the same way, after a fresh read. While another capture, cancel
    or refund of the charge is being sent, :class:`ChargeBusyError` (nothing
    sent). When the gateway never answers for sure:
    :class:`ActionOutcomeUnknownError` (do not capture again: it is checked).
    """
    args = {"amount": amount, "currency": currency}
    given = check_fields({k: v for k, v in args.items() if v is not None})
    captured: Charge = act(
        CAPTURE, charge, given=given, idempotency_key=idempotency_key, requested_by=requested_by
    )
    return captured
