"""Capture an authorization, cancel a charge, update a charge's metadata."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.db import router, transaction
from django.utils.translation import gettext

from .. import signals
from ..client.lifecycle_params import capture_body, check_fields, metadata_body
from ..client.vocabulary import CANCELABLE_STATUSES, UNPAID_FINAL_STATUSES
from ..exceptions import ChargeStateError, FieldError, InvalidParametersError
from ..models import Cancel, Charge, ChargeActionRequest
from .actions import SENDERS, act_once, refused, send_operation, store_of, succeeded
from .charges import refresh_charge, store_remote_charge
from .clients import get_client
from .lifecycle_store import store_cancel

logger = logging.getLogger("django_paycharge.services")

Kind = ChargeActionRequest.Kind


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
    is refused the same way, after a fresh read.
    """
    args = {"amount": amount, "currency": currency}
    given = check_fields({k: v for k, v in args.items() if v is not None})
    captured: Charge = act_once(
        Kind.CAPTURE,
        charge,
        given=given,
        idempotency_key=idempotency_key,
        requested_by=requested_by,
        prepare=lambda fresh: _prepare_capture(fresh, given),
    )
    return captured


def _prepare_capture(fresh: Charge, given: dict[str, Any]) -> Callable[[Charge], dict[str, Any]]:
    """Refuse a capture the fresh charge does not allow; its parameters, checked."""
    if fresh.status != "authorized":
        raise refused(Kind.CAPTURE, fresh.status)
    if "amount" in given:
        given.setdefault("currency", fresh.requested_currency)
    params = capture_body(**given) or {}
    authorized = fresh.requested_amount
    if authorized is not None and params.get("amount", 0) > authorized:
        reason = gettext("must be at most the authorized amount, %(n)d") % {"n": authorized}
        raise InvalidParametersError(errors=[FieldError("amount", reason)])
    return lambda locked: params


def _send_capture(request: ChargeActionRequest) -> Charge:
    charge = request.charge
    client = get_client(request.account)
    client.charges.capture(
        store_of(charge),
        charge.gateway_id,
        **request.params,
        idempotency_key=request.idempotency_key,
    )
    fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
    if fresh.status in UNPAID_FINAL_STATUSES:
        # Accepted, then failed: an expired authorization (313) ends here.
        error = fresh.error if isinstance(fresh.error, dict) else {}
        detail = str(error.get("message") or error.get("detail") or fresh.status)
        raise ChargeStateError(
            gettext("The capture failed: %(reason)s.") % {"reason": detail}, status=fresh.status
        )
    alias = router.db_for_write(Charge)  # where refresh_charge stored ``fresh``
    with transaction.atomic(using=alias):  # the request's success and its announcement
        succeeded(request)
        signals.send(
            signals.charge_captured,
            sender=Charge,
            using=alias,
            charge=fresh,
            amount=request.params.get("amount"),
        )
    return fresh


def cancel_charge(
    charge: Charge,
    *,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Cancel:
    """Cancel a charge exactly once; returns the cancel (``charge_canceled`` when it succeeds).

    The gateway decides what it accepts; a charge already final (other than
    ``successful``) is refused at once with :class:`ChargeStateError`.
    """
    params = metadata_body(metadata, required=False)

    def prepare(fresh: Charge) -> Callable[[Charge], dict[str, Any]]:
        if fresh.status not in CANCELABLE_STATUSES:
            raise refused(Kind.CANCEL, fresh.status)
        return lambda locked: params

    cancel: Cancel = act_once(
        Kind.CANCEL,
        charge,
        given=params,
        idempotency_key=idempotency_key,
        requested_by=requested_by,
        prepare=prepare,
    )
    return cancel


def _send_cancel(request: ChargeActionRequest) -> Cancel:
    charge = request.charge
    cancel: Cancel = send_operation(
        request,
        lambda client: client.cancels,
        store_cancel,
        # A cancel changes the charge too: its row is read again before charge_canceled goes out.
        after_reread=lambda: refresh_charge(
            charge.gateway_id, charge.store_id, account=charge.account
        ),
    )
    return cancel


def update_charge_metadata(
    charge: Charge,
    metadata: Mapping[str, Any],
    *,
    idempotency_key: uuid.UUID | str | None = None,
) -> Charge:
    """Add or change metadata keys of a charge on the gateway; returns the updated mirror row.

    Idempotent by nature (the same keys set twice give the same charge), so no
    request row is kept; the request still carries a key so a lost answer is
    retried safely. The customer's return query keeps the creation-time metadata.
    """
    metadata_body(metadata, required=True)  # raises InvalidParametersError naming bad keys
    client = get_client(charge.account)
    remote = client.charges.update(
        store_of(charge), charge.gateway_id, metadata=metadata, idempotency_key=idempotency_key
    )
    return store_remote_charge(remote, account=charge.account, payment_type=charge.payment_type)


SENDERS[Kind.CAPTURE] = _send_capture
SENDERS[Kind.CANCEL] = _send_cancel
