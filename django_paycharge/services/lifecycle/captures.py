"""Capture an authorization exactly once: the capture kind of the exactly-once machine."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import router
from django.utils.translation import gettext

from ... import outbox, signals
from ...client.lifecycle_params import capture_body, check_fields
from ...client.types import Charge as RemoteCharge
from ...client.vocabulary import ALREADY_CAPTURED, UNPAID_FINAL_STATUSES
from ...exceptions import ChargeStateError, FieldError, InvalidParametersError
from ...models import Charge, ChargeActionRequest
from ..clients import get_client
from ..mirror import store_of, store_remote_charge
from .request_rows import succeed
from .requests import LifecycleKind, act


class CaptureKind(LifecycleKind):
    """``POST .../capture`` with the request's key; the result is the charge, read after it."""

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
        client = get_client(request.account)
        store = store_of(charge)
        client.charges.capture(
            store, charge.gateway_id, **request.params, idempotency_key=request.idempotency_key
        )
        # The answer does not hold the charge (the SDK documents ``{}``), and an accepted
        # capture of a lapsed authorization ends ``failed``: the one read after it.
        return self._captured(request, client.charges.retrieve(store, charge.gateway_id))

    def find(self, request: ChargeActionRequest) -> Charge | None:
        charge = request.charge
        remote = get_client(request.account).charges.retrieve(store_of(charge), charge.gateway_id)
        wanted = request.params.get("amount") or remote.requested_amount
        if remote.status != "successful" or remote.charged_amount not in (None, wanted):
            store_remote_charge(remote, account=charge.account)
            return None
        return self._captured(request, remote)

    def _captured(self, request: ChargeActionRequest, remote: RemoteCharge) -> Charge:
        """Done: the charge stored and the request succeeded with it, in one transaction
        (``charge_captured`` once), unless the charge failed."""
        account = request.charge.account
        if remote.status in UNPAID_FINAL_STATUSES:
            # Accepted, then failed: an expired authorization (313) ends here, for good.
            fresh = store_remote_charge(remote, account=account)
            error = fresh.error if isinstance(fresh.error, dict) else {}
            detail = str(error.get("message") or error.get("detail") or fresh.status)
            failed = ChargeStateError(
                gettext("The capture failed: %(reason)s.") % {"reason": detail},
                status=fresh.status,
            )
            failed.outcome = "refused"
            raise failed

        def link(fresh: Charge) -> None:
            if succeed(request):
                outbox.send(
                    signals.charge_captured,
                    sender=Charge,
                    using=router.db_for_write(Charge),  # where the charge was just stored
                    charge=fresh,
                    amount=request.params.get("amount"),
                )

        return store_remote_charge(remote, account=account, then=link)


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
