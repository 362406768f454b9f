"""Create a charge exactly once: the request row, keyed by the caller's own object, comes first."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import models, router

from .. import conf
from ..client._params import charge_create_body
from ..client.validation import validate_idempotency_key
from ..exceptions import (
    FieldError,
    IdempotencyKeyReusedError,
    InvalidParametersError,
)
from ..models import Charge, ChargeRequest
from .outcomes import answer_settled_request, send_charge_request
from .retry import retry_transient

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


def idempotency_key_for(obj: models.Model, attempt: int = 1, *, purpose: str = "pay") -> str:
    """A caller key for :func:`create_charge` derived from the shop's own object.

    ``idempotency_key_for(order, 2)`` is ``"shop.order-42-pay-2"``: every request
    made for that order's second payment attempt (a double submit, a second tab,
    a retry after an error page) is one charge request, so at most one charge.
    Move to the next ``attempt`` only once the last one is known to have charged
    nothing (see :func:`check_charge_request`).
    """
    if obj.pk is None:
        raise ValueError("idempotency_key_for() needs a saved object (its pk is the key).")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValueError("attempt must be a positive integer.")
    return f"{obj._meta.label_lower}-{obj.pk}-{purpose}-{attempt}"


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

    ``idempotency_key``: the caller's key for this payment, derived from its own
    object (:func:`idempotency_key_for`, or e.g. ``f"order-{order.pk}-attempt-{n}"``).
    Every call with the same key and arguments is the same request: it returns
    the same charge, or joins the request still being sent; the same key with
    other arguments raises :class:`~django_paycharge.exceptions.IdempotencyKeyReusedError`.
    Without a key, each call is a new request.

    The request is committed before anything is sent, so this must not run
    inside a transaction of the caller's. While the gateway's answer is unknown
    (time-outs, dropped connections, 5xx, ``IDEMPOTENCY_KEY_IN_PROGRESS``) it is
    asked again with the same key, for up to ``PAYCHARGE["CREATE_SETTLE_SECONDS"]``.

    Raises, with ``exc.outcome`` saying which:

    - ``"refused"``: the gateway refused the request (its own error class, e.g.
      :class:`~django_paycharge.exceptions.BadRequestError`), or the arguments
      broke a rule (:class:`~django_paycharge.exceptions.InvalidParametersError`,
      nothing stored). Nothing was charged, nothing will be.
    - ``"unknown"``: :class:`~django_paycharge.exceptions.ChargeOutcomeUnknownError`.
      The request is abandoned (never sent again); the gateway may still have
      created the charge. Do not pay again with a new token: check again.
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
    key = None if idempotency_key is None else _caller_key(idempotency_key)
    request = _open_request(params, name, key)
    if request.state not in ChargeRequest.OPEN_STATES:
        return answer_settled_request(request)
    return send_charge_request(request)


# What the spec allows but the mirror could not store: refused before the gateway
# takes a charge the shop would then be unable to record.
_MAX_AMOUNT = 2**63 - 1
_MAX_MERCHANT_TRANSACTION_ID = 255
_FIELD_NAMES = {
    "ip_address": "client_metadata.ip_address",
    "redirect_endpoint": "redirect.endpoint",
    "three_ds_redirect_endpoint": "three_ds.redirect_endpoint",
    "three_ds_mode": "three_ds.mode",
}


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


def _json_safe(params: dict[str, Any]) -> dict[str, Any]:
    safe = {k: v for k, v in params.items() if v is not None}
    safe["transaction_token_id"] = str(safe["transaction_token_id"])
    if isinstance(safe.get("capture_at"), datetime):
        safe["capture_at"] = safe["capture_at"].isoformat()
    return safe


def _caller_key(key: uuid.UUID | str) -> str:
    try:
        return validate_idempotency_key(key)
    except InvalidParametersError:
        raise InvalidParametersError(
            errors=[FieldError("idempotency_key", "must be 1 to 255 printable ASCII characters")]
        ) from None


def _open_request(params: dict[str, Any], account: str, key: str | None) -> ChargeRequest:
    """The committed request for ``key`` (created now, or the one made by an earlier call)."""
    alias = router.db_for_write(ChargeRequest)
    if key is None:
        return retry_transient(
            lambda: ChargeRequest.objects.create(params=params, account=account),
            using=alias,
            durable=True,
        )
    # The key sent to the gateway is a random UUID, never the caller's: keys like
    # "order-42-attempt-1" would collide between two shops (staging and live, say)
    # that share a gateway account. A caller's UUID is kept, as before.
    gateway_key = _as_uuid(key) or uuid.uuid4()

    def open_or_join() -> tuple[ChargeRequest, bool]:
        found = ChargeRequest.objects.filter(caller_key=key).first()
        if found is None and _as_uuid(key) is not None:
            found = ChargeRequest.objects.filter(idempotency_key=gateway_key).first()  # pre-0003
        if found is not None:
            return found, False
        return ChargeRequest.objects.get_or_create(
            caller_key=key,
            defaults={"params": params, "account": account, "idempotency_key": gateway_key},
        )

    request, created = retry_transient(open_or_join, using=alias, durable=True)
    if not created and (request.params != params or request.account != account):
        raise IdempotencyKeyReusedError()
    return request


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
