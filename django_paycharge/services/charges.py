"""Create, refresh and wait for charges; settle charge requests left in flight."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from .. import conf, signals
from ..client import PayChargeClient
from ..client._params import charge_create_body
from ..client.types import Charge as RemoteCharge
from ..exceptions import (
    APIError,
    FieldError,
    InvalidParametersError,
    NetworkError,
    PayChargeError,
    RateLimitError,
    ServerError,
)
from ..models import Charge, ChargeRequest
from .clients import get_client
from .upsert import upsert_charges

logger = logging.getLogger("django_paycharge.services")

#: The charge arguments of :func:`create_charge` (besides ``account`` and ``idempotency_key``).
CREATE_ARGS = (
    "transaction_token_id",
    "amount",
    "currency",
    "capture",
    "capture_at",
    "merchant_transaction_id",
    "ip_address",
    "metadata",
    "redirect_endpoint",
    "three_ds_redirect_endpoint",
    "three_ds_mode",
)


def create_charge(
    *,
    transaction_token_id: uuid.UUID | str,
    amount: int,
    currency: str,
    account: str | None = None,
    capture: bool | None = None,
    capture_at: datetime | str | None = None,
    merchant_transaction_id: str | None = None,
    ip_address: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    redirect_endpoint: str | None = None,
    three_ds_redirect_endpoint: str | None = None,
    three_ds_mode: str | None = None,
    idempotency_key: uuid.UUID | str | None = None,
) -> Charge:
    """Create a charge exactly once and return its mirror row.

    The request is committed with its idempotency key before anything is
    sent, so it must not run inside a transaction of the caller's. If the
    gateway cannot be reached, :class:`~django_paycharge.exceptions.NetworkError`
    is raised and the request stays pending: calling again with the same
    ``idempotency_key``, or ``paycharge_recover``, settles it without a second
    charge. Input that breaks a rule of the spec raises
    :class:`~django_paycharge.exceptions.InvalidParametersError` and nothing is stored.
    """
    params: dict[str, Any] = {
        "transaction_token_id": transaction_token_id,
        "amount": amount,
        "currency": currency,
        "capture": capture,
        "capture_at": capture_at,
        "merchant_transaction_id": merchant_transaction_id,
        "ip_address": ip_address,
        "metadata": dict(metadata) if metadata is not None else None,
        "redirect_endpoint": redirect_endpoint,
        "three_ds_redirect_endpoint": three_ds_redirect_endpoint,
        "three_ds_mode": three_ds_mode,
    }
    charge_create_body(**params)  # raises InvalidParametersError naming every bad field
    _check_storable(params)
    params = _json_safe(params)
    name = account or conf.DEFAULT_ACCOUNT
    conf.get_account(name)  # a misconfigured account fails before anything is stored
    request = _open_request(params, name, idempotency_key)
    if request.charge_id is not None:
        assert request.charge is not None
        return request.charge
    return send_charge_request(request)


# What the spec allows but the mirror could not store: refused before the gateway
# takes a charge the shop would then be unable to record.
_MAX_AMOUNT = 2**63 - 1
_MAX_MERCHANT_TRANSACTION_ID = 255


def _check_storable(params: dict[str, Any]) -> None:
    errors: list[FieldError] = []
    if isinstance(params["amount"], int) and params["amount"] > _MAX_AMOUNT:
        errors.append(FieldError("amount", f"must be at most {_MAX_AMOUNT}"))
    mtid = params.get("merchant_transaction_id")
    if isinstance(mtid, str) and len(mtid) > _MAX_MERCHANT_TRANSACTION_ID:
        errors.append(
            FieldError(
                "merchant_transaction_id",
                f"must be at most {_MAX_MERCHANT_TRANSACTION_ID} characters",
            )
        )
    for name, value in params.items():
        texts = [value] if isinstance(value, str) else []
        if isinstance(value, dict):
            texts = [str(k) for k in value] + [v for v in value.values() if isinstance(v, str)]
        if any("\x00" in text for text in texts):
            errors.append(FieldError(_FIELD_NAMES.get(name, name), "must not contain NUL"))
    if errors:
        raise InvalidParametersError(errors=errors)


_FIELD_NAMES = {
    "ip_address": "client_metadata.ip_address",
    "redirect_endpoint": "redirect.endpoint",
    "three_ds_redirect_endpoint": "three_ds.redirect_endpoint",
    "three_ds_mode": "three_ds.mode",
}


def _json_safe(params: dict[str, Any]) -> dict[str, Any]:
    safe = {k: v for k, v in params.items() if v is not None}
    safe["transaction_token_id"] = str(safe["transaction_token_id"])
    if isinstance(safe.get("capture_at"), datetime):
        safe["capture_at"] = safe["capture_at"].isoformat()
    return safe


def _open_request(
    params: dict[str, Any], account: str, key: uuid.UUID | str | None
) -> ChargeRequest:
    if key is None:
        with transaction.atomic(durable=True):
            return ChargeRequest.objects.create(params=params, account=account)
    key = uuid.UUID(str(key))
    with transaction.atomic(durable=True):
        request, created = ChargeRequest.objects.get_or_create(
            idempotency_key=key, defaults={"params": params, "account": account}
        )
    if not created and (request.params != params or request.account != account):
        raise PayChargeError(
            gettext(
                "This idempotency key was already used for a different charge request; "
                "use a new key for a new charge."
            )
        )
    return request


def send_charge_request(request: ChargeRequest) -> Charge:
    """Send (or resend) a committed charge request with its idempotency key."""
    client = get_client(request.account)
    ChargeRequest.objects.filter(pk=request.pk).update(attempts=F("attempts") + 1)
    try:
        remote = client.charges.create(
            **request.params, idempotency_key=str(request.idempotency_key)
        )
    except (ServerError, RateLimitError) as exc:
        _record_error(request, exc, final=False)
        raise
    except APIError as exc:
        # The gateway refused the request for good: resending cannot succeed.
        _record_error(request, exc, final=True)
        raise
    except PayChargeError as exc:
        _record_error(request, exc, final=False)
        raise
    payment_type = transaction_token_payment_type(client, remote)
    charge = store_remote_charge(remote, account=request.account, payment_type=payment_type)
    ChargeRequest.objects.filter(pk=request.pk).update(
        state=ChargeRequest.State.SUCCEEDED, charge=charge, error=None, updated_at=timezone.now()
    )
    signals.charge_created.send(sender=Charge, charge=charge)
    return charge


def _record_error(request: ChargeRequest, exc: PayChargeError, *, final: bool) -> None:
    error = {
        "type": type(exc).__name__,
        "message": exc.message,
        "http_status": exc.http_status,
        "code": exc.code,
        "request_id": exc.request_id,
    }
    update: dict[str, Any] = {"error": error, "updated_at": timezone.now()}
    if final:
        update["state"] = ChargeRequest.State.FAILED
    ChargeRequest.objects.filter(pk=request.pk).update(**update)
    logger.warning(
        "Charge request %s %s: %s",
        request.idempotency_key,
        "failed" if final else "left pending",
        type(exc).__name__,
    )


def transaction_token_payment_type(client: PayChargeClient, remote: RemoteCharge) -> str:
    """The payment type of a charge's transaction token, or "" when it cannot be read now.

    The charge does not carry it; a failure here never fails the caller: the
    background fill picks the charge up later.
    """
    if remote.store_id is None or remote.transaction_token_id is None:
        return ""
    try:
        token = client.tokens.retrieve(remote.store_id, remote.transaction_token_id)
    except PayChargeError as exc:
        logger.info("Payment type of charge %s not read yet: %s", remote.id, type(exc).__name__)
        return ""
    return token.payment_type or ""


def store_remote_charge(remote: RemoteCharge, *, account: str, payment_type: str = "") -> Charge:
    """Upsert one charge read from the gateway (guarded: never regresses a status)."""
    result = upsert_charges(
        [remote], account=account, payment_types={remote.id: payment_type}, load=True
    )
    return result.charges[remote.id]


def recover_charge_requests(*, older_than: timedelta = timedelta(seconds=30)) -> dict[str, int]:
    """Settle charge requests left pending (crash or lost answer): resend each with its key."""
    cutoff = timezone.now() - older_than
    counts = {"settled": 0, "failed": 0, "still_pending": 0}
    pending = ChargeRequest.objects.filter(
        state=ChargeRequest.State.PENDING, created_at__lte=cutoff
    )
    for request in pending.order_by("created_at").iterator():
        try:
            send_charge_request(request)
        except APIError as exc:
            final = not isinstance(exc, ServerError | RateLimitError)
            counts["failed" if final else "still_pending"] += 1
        except PayChargeError:
            counts["still_pending"] += 1
        else:
            counts["settled"] += 1
    return counts


def refresh_charge(
    charge_id: uuid.UUID | str,
    store_id: uuid.UUID | str | None = None,
    *,
    account: str | None = None,
    polling: bool = False,
    deadline: float | None = None,
) -> Charge:
    """Read one charge from the gateway and update (or create) its mirror row.

    ``deadline`` (a :func:`time.monotonic` value) bounds the read; a new
    charge's payment type is then left to the background fill, so the call
    makes one request only.
    """
    charge_uuid = uuid.UUID(str(charge_id))
    local = (
        Charge.objects.filter(gateway_id=charge_uuid)
        .only("account", "store_id", "payment_type")
        .first()
    )
    name = account or (local.account if local else conf.DEFAULT_ACCOUNT)
    store = store_id or (local.store_id if local else None) or conf.get_account(name).store_id
    if store is None:
        raise PayChargeError(
            gettext("The charge's store is unknown: pass store_id, or set PAYCHARGE['STORE_ID'].")
        )
    client = get_client(name)
    remote = client.charges.retrieve(store, charge_uuid, polling=polling, deadline=deadline)
    payment_type = ""
    # Known payment types are kept by the upsert: only a new charge costs a token read.
    if deadline is None and (local is None or not local.payment_type):
        payment_type = transaction_token_payment_type(client, remote)
    return store_remote_charge(remote, account=name, payment_type=payment_type)


#: Pause after a polling answer that came back still ``pending`` without being held
#: (a gateway or proxy that ignores ``polling=true``), doubled each time up to the cap.
WAIT_BACKOFF = 0.1
WAIT_BACKOFF_MAX = 2.0
#: A polling answer back sooner than this was not held.
_HELD = 0.5


def wait_for_charge(
    charge: Charge, *, timeout: float = 30.0, sleep: Callable[[float], object] = time.sleep
) -> Charge:
    """Wait (within ``timeout`` seconds) for a ``pending`` charge to move on; return the freshest.

    Uses the gateway's ``polling=true`` reads, which hold the answer until the
    status changes or the gateway's own limit passes. Every read's time-out is
    the time left, so the call returns within ``timeout`` plus one connect
    time-out at most; a read that runs out of time returns what is known. An
    answer that did not hold is followed by a growing pause, never a busy loop.
    """
    deadline = time.monotonic() + timeout
    current = charge
    backoff = WAIT_BACKOFF
    polling = False  # the first read is a plain one: the charge may have moved on already
    while current.status == "pending" or not polling:
        if time.monotonic() >= deadline:
            break
        asked = time.monotonic()
        try:
            current = refresh_charge(
                charge.gateway_id,
                charge.store_id,
                account=charge.account,
                polling=polling,
                deadline=deadline,
            )
        except NetworkError:
            if time.monotonic() >= deadline:
                break  # the read ran out of the time given: the caller gets what is known
            raise
        if current.status != "pending":
            break
        if polling and time.monotonic() - asked < _HELD:
            sleep(max(0.0, min(backoff, deadline - time.monotonic())))
            backoff = min(backoff * 2, WAIT_BACKOFF_MAX)
        polling = True
    return current
