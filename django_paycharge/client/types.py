"""Typed results of the client.

Every result is a frozen dataclass whose attributes carry the spec's field
names and which keeps the JSON object it was built from as ``raw``, so a field
the gateway adds later is never lost. Money is ``int`` (minor units) or
``Decimal`` (``*_formatted``), times are aware ``datetime``, ids are ``UUID``.
Enumerations (``status``, ``mode``, ``call_method``, ``payment_type``...) stay
plain ``str`` so a value the gateway adds later passes through. A field the
gateway did not send, sent as null, or sent in a form that cannot be typed (a
store id that is not a UUID, an amount that is not a whole number) is ``None``;
``raw`` still holds it exactly as received. Text fields take a number as its
text. Only a resource's own ``id`` is required.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar

T = TypeVar("T")

JSONObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChargeError:
    """The ``error`` object of a failed charge (``code`` 306: declined, 330: no funds...)."""

    code: int | None
    message: str | None
    detail: str | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ChargeRedirect:
    """The ``redirect`` object of a charge created with ``redirect.endpoint``."""

    endpoint: str | None
    redirect_id: uuid.UUID | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ThreeDS:
    """The ``three_ds`` object of a charge."""

    redirect_endpoint: str | None
    mode: str | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Charge:
    """A charge, as returned by create, retrieve and the lists."""

    id: uuid.UUID
    store_id: uuid.UUID | None
    transaction_token_id: uuid.UUID | None
    transaction_token_type: str | None
    subscription_id: uuid.UUID | None
    merchant_transaction_id: str | None
    requested_amount: int | None
    requested_currency: str | None
    requested_amount_formatted: Decimal | None
    charged_amount: int | None
    charged_currency: str | None
    charged_amount_formatted: Decimal | None
    fee_amount: int | None
    fee_currency: str | None
    fee_amount_formatted: Decimal | None
    only_direct_currency: bool | None
    capture_at: datetime | None
    descriptor: str | None
    descriptor_phone_number: str | None
    status: str | None
    error: ChargeError | None
    metadata: JSONObject | None
    mode: str | None
    created_on: datetime | None
    redirect: ChargeRedirect | None
    merchant_name: str | None
    store_name: str | None
    three_ds: ThreeDS | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class IssuerToken:
    """Payment information for an ``online`` or ``bank_transfer`` charge.

    ``repr`` masks ``account_number`` (last 4 characters at most) and leaves
    out ``raw``, which holds it in full.
    """

    payment_type: str | None
    issuer_token: str | None
    payload: JSONObject | None
    call_method: str | None
    account_id: str | None
    branch_code: str | None
    branch_name: str | None
    account_holder_name: str | None
    account_number: str | None
    raw: JSONObject = field(repr=False, compare=False)

    def __repr__(self) -> str:
        return (
            f"IssuerToken(payment_type={self.payment_type!r}, call_method={self.call_method!r}, "
            f"issuer_token={self.issuer_token!r}, account_id={self.account_id!r}, "
            f"branch_code={self.branch_code!r}, branch_name={self.branch_name!r}, "
            f"account_number={mask_account_number(self.account_number)!r})"
        )

    __str__ = __repr__


def mask_account_number(value: str | None) -> str | None:
    """``"1234567"`` -> ``"***4567"``; short numbers are masked entirely."""
    if value is None:
        return None
    text = str(value)
    return "***" + text[-4:] if len(text) > 4 else "***"


def token_digest(token: str) -> str:
    """Hex SHA-256 of a webhook auth token's UTF-8 bytes: what is kept instead of the token."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class WebhookConfiguration:
    """A webhook configuration of a store.

    The gateway's ``auth_token`` is a secret: it is neither an attribute nor
    kept in ``raw``. ``auth_token_sha256`` (its :func:`token_digest`,
    ``None`` when the gateway sent none) lets a receiver check deliveries
    against it without keeping the token itself.
    """

    id: uuid.UUID
    platform_id: uuid.UUID | None
    merchant_id: uuid.UUID | None
    store_id: uuid.UUID | None
    triggers: tuple[str, ...]
    url: str | None
    active: bool | None
    created_on: datetime | None
    updated_on: datetime | None
    is_integration: bool | None
    auth_token_sha256: str | None = field(repr=False)
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class CvvAuthorization:
    """A card token's ``data.cvv_authorize``: whether the store has its CVV authorized before
    the first charge, and how far that went (``pending``, ``current``, ``failed``...)."""

    enabled: bool | None
    status: str | None
    charge_id: uuid.UUID | None
    currency: str | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class TokenCard:
    """What a card token says of its card (``data.card``): what a shop shows a returning
    customer ("VISA ending 4242, 12/2030"). Never the number."""

    brand: str | None
    last_four: str | None
    exp_month: int | None
    exp_year: int | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class TransactionToken:
    """A transaction token (``data`` holds ``brand`` and ``call_method`` for online tokens).

    A saved card is a token of ``type`` ``recurring``: ``usage_limit`` (at most one charge
    per ``daily``/``weekly``/``monthly``/``annually`` period, None: no limit),
    ``cvv_authorize`` (its CVV authorization, when the store asks for one), ``active``
    (False once deleted) and ``previous_id`` (the token a renewal replaced). ``card``: the
    card's brand, last four digits and expiry, for a card token.
    """

    id: uuid.UUID
    store_id: uuid.UUID | None
    payment_type: str | None
    type: str | None
    mode: str | None
    email: str | None
    metadata: JSONObject | None
    data: JSONObject | None
    created_on: datetime | None
    raw: JSONObject = field(repr=False, compare=False)
    active: bool | None = None
    usage_limit: str | None = None
    last_used_on: datetime | None = None
    previous_id: uuid.UUID | None = None
    cvv_authorize: CvvAuthorization | None = None
    card: TokenCard | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    """A list item that could not be read (not an object, no usable ``id``), kept as sent."""

    raw: Any
    reason: str


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list: ``items``, ``has_more``, and ``total_hits`` when the gateway sends it.

    ``rejected`` holds the items that could not be read, in the order received.
    """

    items: tuple[T, ...]
    has_more: bool
    total_hits: int | None = None
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)
    rejected: tuple[Rejected, ...] = ()
