"""Create a charge exactly once: the request row, keyed by the caller's own object, comes first."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connections, models, router, transaction
from django.utils import timezone
from django.utils.translation import gettext

from ... import conf
from ...client.params import ChargeCreateParams, wire_name
from ...client.validation import validate_idempotency_key
from ...exceptions import FieldError, IdempotencyKeyReusedError, InvalidParametersError
from ...models import Charge, ChargeRequest
from ..clients import get_client
from ..mirror import as_stored, insert_once
from .outcomes import answer_settled_request, send_charge_request


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
    params: ChargeCreateParams | None = None,
    /,
    *,
    account: str | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    **fields: Any,
) -> Charge:
    """Create a charge exactly once and return its mirror row.

    The charge's parameters are a :class:`~django_paycharge.client.params.ChargeCreateParams`,
    or its fields as keyword arguments (``transaction_token_id``, ``amount`` and
    ``currency`` required; ``capture``, ``capture_at``, ``merchant_transaction_id``,
    ``ip_address``, ``metadata``, ``redirect_endpoint``, ``three_ds_redirect_endpoint``,
    ``three_ds_mode`` optional).

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
    - ``"not_sent"``: unreachable, or the shop's settings refused (the owner is told):
      nothing was processed. Show ``exc.customer_message``; the same key sends it again.
    - ``"unknown"``: :class:`~django_paycharge.exceptions.ChargeOutcomeUnknownError`.
      The request is abandoned (never sent again); the gateway may still have
      created the charge. Do not pay again with a new token: check again.
    """
    stored = _validated(params, fields)
    name = account or conf.DEFAULT_ACCOUNT
    get_client(name)  # a misconfigured account fails (and is told) before anything is stored
    key = None if idempotency_key is None else _caller_key(idempotency_key)
    request, new = _open_request(stored, name, key)
    if new:
        return send_charge_request(request, recorded=True)
    if request.state not in ChargeRequest.OPEN_STATES:
        return answer_settled_request(request)
    return send_charge_request(request)


def _validated(params: ChargeCreateParams | None, fields: dict[str, Any]) -> dict[str, Any]:
    """The charge's parameters checked by the client's rules and the mirror's limits, as stored."""
    charge = ChargeCreateParams.given(params, fields)
    charge.to_body()  # raises InvalidParametersError naming every bad field
    errors = storage_errors(charge)
    if errors:
        raise InvalidParametersError(errors=errors)
    return _json_safe(charge)


# What the spec allows but the mirror cannot store: refused before the gateway
# takes a charge the shop would then be unable to record.
MAX_STORED_INT = 2**63 - 1
MAX_MERCHANT_TRANSACTION_ID = 255


def storage_errors(params: ChargeCreateParams) -> list[FieldError]:
    """What in ``params`` the mirror could not store (too large, too long, NUL characters).

    Checked on top of the gateway's rules (:meth:`ChargeCreateParams.to_body`),
    by :func:`create_charge` and the DRF endpoint alike.
    """
    errors: list[FieldError] = []
    if isinstance(params.amount, int) and params.amount > MAX_STORED_INT:
        errors.append(FieldError("amount", gettext("is too large")))
    mtid = params.merchant_transaction_id
    if isinstance(mtid, str) and len(mtid) > MAX_MERCHANT_TRANSACTION_ID:
        errors.append(
            FieldError("merchant_transaction_id", gettext("is longer than 255 characters"))
        )
    for name, value in params.to_dict().items():
        if has_nul(value):
            # PostgreSQL cannot store NUL in text or JSON.
            reason = gettext("must not contain NUL characters")
            errors.append(FieldError(wire_name(name), reason))
    return errors


def has_nul(value: Any) -> bool:
    """Whether ``value`` (text, or a mapping of them) holds a NUL character anywhere."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    return False


def _json_safe(params: ChargeCreateParams) -> dict[str, Any]:
    """The request's parameters as stored: the client's keyword arguments, in JSON."""
    safe = params.to_dict()
    safe["transaction_token_id"] = str(safe["transaction_token_id"])
    if "metadata" in safe:
        safe["metadata"] = dict(safe["metadata"])
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


def _open_request(
    params: dict[str, Any], account: str, key: str | None
) -> tuple[ChargeRequest, bool]:
    """The committed request for ``key``, and whether this call made it.

    A new request is committed in one statement, already saying it is being
    sent (``unknown``, its first send counted): the caller sends it at once,
    with no second write before the POST. A crash in between leaves it for
    ``paycharge_recover``, which sends it with its key, as it would any request
    whose answer never came.
    """
    alias = router.db_for_write(ChargeRequest)
    # The key sent to the gateway is a random UUID, never the caller's: keys like
    # "order-42-attempt-1" would collide between two shops (staging and live, say)
    # that share a gateway account. A caller's key that is a UUID is sent as it is.
    given_uuid = None if key is None else _as_uuid(key)
    now = timezone.now()
    values = {
        "params": params,
        "account": account,
        "idempotency_key": given_uuid or uuid.uuid4(),
        "caller_key": key,
        "state": ChargeRequest.State.UNKNOWN,
        "attempts": 1,
        "sent_at": now,
        "created_at": now,
        "updated_at": now,
    }
    if connections[alias].in_atomic_block:
        # Refused by Django inside a transaction of the caller's (a test's is allowed).
        with transaction.atomic(using=alias, durable=True):
            pk = insert_once(ChargeRequest, values, using=alias)
    else:
        # One statement in autocommit: committed when it returns. (SQLite waits for a
        # busy writer up to its time-out; nothing was sent if it fails.)
        pk = insert_once(ChargeRequest, values, using=alias)
    if pk is not None:
        return as_stored(ChargeRequest, pk, values, alias), True
    # The key is taken: by an earlier call, or (a UUID) by a row made before caller
    # keys were stored (0003), found by its gateway key.
    found = ChargeRequest.objects.filter(caller_key=key).first()
    if found is None and given_uuid is not None:
        found = ChargeRequest.objects.filter(idempotency_key=given_uuid).first()
    if found is None:  # pragma: no cover - a unique key neither inserted nor found
        raise IntegrityError(f"Charge request {key!r} was neither stored nor found.")
    if found.params != params or found.account != account:
        raise IdempotencyKeyReusedError()
    return found, False


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
