"""Typed results and vocabulary of a charge's later life: refunds, cancels, captures, 3-D Secure.

Like :mod:`django_paycharge.client.types`: frozen dataclasses that keep the
JSON object they were built from as ``raw``; a field the gateway did not send
(or sent in a shape we cannot type) is ``None`` and stays in ``raw``.
Statuses and reasons stay plain ``str`` so a value the gateway adds later
passes through. The vocabulary below comes from the gateway's official SDK.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from .types import ChargeError, JSONObject

#: Statuses of a refund and of a cancel (the same four in the SDK).
REFUND_STATUSES = ("pending", "successful", "failed", "error")
CANCEL_STATUSES = REFUND_STATUSES
#: A refund or cancel in one of these statuses will not change again.
FINAL_OPERATION_STATUSES = frozenset({"successful", "failed", "error"})
#: Reasons a merchant may send when refunding.
REFUND_REASONS = ("duplicate", "fraud", "customer_request")
#: Reasons the gateway may report on a refund (the merchant's three plus its own).
REPORTED_REFUND_REASONS = (
    *REFUND_REASONS,
    "system_failure",
    "chargeback",
    "chargeback_fee_exempt",
    "chargeback_reverse",
)
#: Webhook triggers about refunds and cancels; ``data`` is the refund or cancel.
REFUND_EVENT = "refund_finished"
CANCEL_EVENT = "cancel_finished"
#: Payment types the gateway refuses to refund (SDK: "Konbini and bank transfer charges
#: cannot be refunded").
NON_REFUNDABLE_PAYMENT_TYPES = frozenset({"konbini", "bank_transfer"})


def operation_rank(status: str | None) -> int:
    """Order of refund and cancel statuses: a stale read never takes one backwards."""
    if status in FINAL_OPERATION_STATUSES:
        return 2
    return 0 if status == "pending" else 1


@dataclass(frozen=True, slots=True)
class Refund:
    """A refund of a charge (``POST``/``GET /stores/{s}/charges/{c}/refunds``)."""

    id: uuid.UUID
    store_id: uuid.UUID | None
    charge_id: uuid.UUID | None
    status: str | None
    amount: int | None
    currency: str | None
    amount_formatted: Decimal | None
    reason: str | None
    message: str | None
    error: ChargeError | None
    metadata: JSONObject | None
    mode: str | None
    created_on: datetime | None
    updated_on: datetime | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Cancel:
    """A cancel of a charge (``POST``/``GET /stores/{s}/charges/{c}/cancels``)."""

    id: uuid.UUID
    store_id: uuid.UUID | None
    charge_id: uuid.UUID | None
    status: str | None
    error: ChargeError | None
    metadata: JSONObject | None
    mode: str | None
    created_on: datetime | None
    updated_on: datetime | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Capture:
    """The gateway's answer to a capture: often an empty object, sometimes amount and currency.

    The charge itself is not in it: read the charge to see it ``successful``.
    """

    amount: int | None
    currency: str | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ThreeDSIssuerToken:
    """Where the customer's browser authenticates a card charge awaiting 3-D Secure.

    ``call_method`` is ``http_post`` (the only one the SDK knows): POST
    ``payload`` to ``issuer_token`` encoded as ``content_type`` (form-encoded).
    """

    payment_type: str | None
    issuer_token: str | None
    call_method: str | None
    payload: JSONObject | None
    content_type: str | None
    raw: JSONObject = field(repr=False, compare=False)
