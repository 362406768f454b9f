"""Typed results of a charge's later life: refunds, cancels, captures, 3-D Secure.

Like :mod:`django_paycharge.client.types`: frozen dataclasses that keep the
JSON object they were built from as ``raw``; a field the gateway did not send
(or sent in a shape we cannot type) is ``None`` and stays in ``raw``.
Statuses and reasons stay plain ``str`` so a value the gateway adds later
passes through. Their vocabulary (statuses, reasons, events) is in
:mod:`django_paycharge.client.vocabulary`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from .types import ChargeError, JSONObject


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


@dataclass(frozen=True, slots=True)
class ChargeExpiry:
    """When a convenience-store or bank-transfer payment must be made by (the latest expiry).

    The gateway's ``GET .../charges/{id}/expiry/latest`` (its Node SDK's
    ``ChargeExpiry``): ``expiration_date``, and how often it was extended.
    """

    expiration_date: datetime | None
    extension_count: int | None
    raw: JSONObject = field(repr=False, compare=False)
