"""Refund a charge, in full or in part, exactly once."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.db.models import Sum
from django.utils.translation import gettext

from ..client.lifecycle_params import check_fields, refund_body
from ..client.vocabulary import NON_REFUNDABLE_PAYMENT_TYPES
from ..exceptions import (
    ChargeStateError,
    FieldError,
    InvalidParametersError,
    UnsupportedPaymentTypeError,
)
from ..models import COUNTED_REFUND_STATUSES, Charge, ChargeActionRequest, Refund
from .actions import SENDERS, act_once, refused, send_operation
from .lifecycle_store import store_refund

logger = logging.getLogger("django_paycharge.services")

KIND = ChargeActionRequest.Kind.REFUND


def refundable_amount(charge: Charge) -> int:
    """What is left to refund, in minor units: the charged amount less refunds pending or
    successful, and less refund requests not yet confirmed by the gateway."""
    charged = charge.charged_amount or 0
    refunds = Refund.objects.filter(charge=charge, status__in=COUNTED_REFUND_STATUSES)
    refunded = refunds.aggregate(total=Sum("amount"))["total"] or 0
    in_flight = ChargeActionRequest.objects.filter(
        charge=charge, kind=KIND, state=ChargeActionRequest.State.PENDING
    ).values_list("params", flat=True)
    asked = sum(int(p.get("amount") or 0) for p in in_flight if isinstance(p, dict))
    return max(0, charged - int(refunded) - asked)


def refund_charge(
    charge: Charge,
    *,
    amount: int | None = None,
    currency: str | None = None,
    reason: str | None = None,
    message: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Refund:
    """Refund ``amount`` of a ``successful`` charge (what is left to refund when None).

    The charge is read from the gateway first; its status and payment type
    must allow a refund (:class:`ChargeStateError`,
    :class:`UnsupportedPaymentTypeError` otherwise), ``currency`` defaults to
    the charged one, and ``amount`` may not exceed what is left
    (:func:`refundable_amount`, checked under a lock on the charge so two
    clicks cannot both pass). The refund is usually ``pending`` when this
    returns; ``refund_status_changed`` tells when it ends. Calling again with
    the same ``idempotency_key`` returns the same refund. Must not run inside
    a transaction of the caller's.
    """
    args: dict[str, Any] = {
        "amount": amount,
        "currency": currency,
        "reason": reason,
        "message": message,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    # Bad input is refused before anything is read or sent; kept in the form it is sent.
    given = check_fields({k: v for k, v in args.items() if v is not None})
    refund: Refund = act_once(
        KIND,
        charge,
        given=given,
        idempotency_key=idempotency_key,
        requested_by=requested_by,
        prepare=lambda fresh: _prepare(fresh, given),
    )
    return refund


def _prepare(fresh: Charge, given: dict[str, Any]) -> Callable[[Charge], dict[str, Any]]:
    """Refuse a refund the fresh charge does not allow; fill in its currency."""
    if fresh.payment_type in NON_REFUNDABLE_PAYMENT_TYPES:
        raise UnsupportedPaymentTypeError(
            gettext("Convenience store and bank transfer payments cannot be refunded.")
        )
    if fresh.status != "successful":
        raise refused(KIND, fresh.status)
    charged_currency = (fresh.charged_currency or fresh.requested_currency or "").upper()
    if given.setdefault("currency", charged_currency) != charged_currency:
        raise InvalidParametersError(
            errors=[FieldError("currency", gettext("must be the charge's currency"))]
        )
    return lambda locked: _refund_params(locked, given)


def _refund_params(locked: Charge, given: dict[str, Any]) -> dict[str, Any]:
    # Under the charge's lock: every request committed before counts.
    left = refundable_amount(locked)
    if "amount" not in given and left == 0:
        raise ChargeStateError(
            gettext("Nothing is left to refund on this charge."), status=locked.status
        )
    params = refund_body(**{"amount": left, **given})
    if params["amount"] > left:
        reason = gettext("must be at most %(left)d, what is left to refund") % {"left": left}
        raise InvalidParametersError(errors=[FieldError("amount", reason)])
    return params


def _send(request: ChargeActionRequest) -> Refund:
    refund: Refund = send_operation(request, lambda client: client.refunds, store_refund)
    return refund


SENDERS[KIND] = _send
