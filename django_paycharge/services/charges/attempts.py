"""An order's payment attempt: the one caller key under which its checkout is exactly once."""

from __future__ import annotations

from django.db import models

from ...exceptions import ChargeOutcomeUnknownError
from ...models import ChargeRequest
from .create import idempotency_key_for
from .outcomes import check_charge_request

#: Attempts looked up in one query (an order rarely has more than one or two).
_BATCH = 8


def payment_attempt_key(order: models.Model | str, *, purpose: str = "pay") -> str:
    """The idempotency key for :func:`create_charge` when ``order`` is paid now.

    ``order``: the shop's own object (any saved model instance) or a key string of
    its own (``"A-1001"``). Keys are ``idempotency_key_for(order, n)``
    (``"shop.order-42-pay-1"``), or ``"A-1001-pay-1"`` for a string. The attempt
    is the last one with a charge request, and it stays the same until that
    request is known to have charged nothing (refused, or not charged, or its
    charge failed): only then does the next attempt start. So a double submit,
    two tabs or two servers paying one order get one key between them, and the
    unique key of the charge request ``create_charge`` commits first decides:
    one request, at most one charge (the same token joins it, another token is
    refused with :class:`~django_paycharge.exceptions.IdempotencyKeyReusedError`).
    No lock is held and no transaction is needed: call it, then ``create_charge``.

    Raises :class:`~django_paycharge.exceptions.ChargeOutcomeUnknownError` while
    the last attempt's outcome is unknown (paying again could charge twice); it
    checks that attempt first (:func:`check_charge_request`, reads only), so the
    error ends once the gateway's answer is found or ``CHARGE_REQUEST_GRACE`` has
    passed with nothing charged. An order that was paid keeps its paid attempt's
    key: refuse the checkout from your own order's state first.
    """
    number, last = _last_attempt(order, purpose)
    if last is None:
        return _key(order, 1, purpose)
    checked = check_charge_request(last)
    if checked is not None and checked.may_pay_again:
        return _key(order, number + 1, purpose)
    if checked is not None and checked.outcome == "unknown":
        raise ChargeOutcomeUnknownError(idempotency_key=last.caller_key)
    return _key(order, number, purpose)  # being sent, or charged: create_charge joins it


def _key(order: models.Model | str, attempt: int, purpose: str) -> str:
    if isinstance(order, str):
        if not order:
            raise ValueError("payment_attempt_key() needs a non-empty order key.")
        return f"{order}-{purpose}-{attempt}"
    return idempotency_key_for(order, attempt, purpose=purpose)


def _last_attempt(order: models.Model | str, purpose: str) -> tuple[int, ChargeRequest | None]:
    """The highest attempt with a charge request, and that request (``0, None``: none yet).

    Attempts are looked up by their exact keys (the unique index), a batch at a time.
    """
    number, last, first = 0, None, 1
    while True:
        keys = {_key(order, n, purpose): n for n in range(first, first + _BATCH)}
        found = list(ChargeRequest.objects.filter(caller_key__in=keys))
        if not found:
            return number, last
        last = max(found, key=lambda request: keys[request.caller_key or ""])
        number = keys[last.caller_key or ""]
        if number < first + _BATCH - 1:
            return number, last
        first += _BATCH
