"""The fake's records and their JSON shapes (what the gateway sends for each resource).

A record knows its own shape and the rules about itself alone (whether a card
charge asks for a 3-D Secure challenge); rules across records live in the state.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..client.vocabulary import LISTED_ONLY_CHARGE_FIELDS
from .basics import CARD_THREE_DS, PLATFORM_ID, Json, fee_for, formatted, formatted_text, iso, now


@dataclass(slots=True)
class Store:
    """A store of a merchant; charges, tokens and webhooks belong to one."""

    id: str
    merchant_id: str
    name: str = "Fake Store"
    merchant_name: str = "Fake Merchant"
    #: The store asks a recurring card token's CVV to be authorized before its first charge
    #: (the gateway's ``recurring_token_configuration.card_charge_cvv_confirmation``).
    cvv_authorization: bool = False
    #: The store asks the security code again for each charge on a recurring card token
    #: (``card_charge_cvv_confirmation``; the fake has no amount threshold).
    cvv_confirmation: bool = False


@dataclass(slots=True, frozen=True)
class AppToken:
    """Credentials the fake accepts. A store token reaches one store; a merchant token all."""

    secret: str
    jwt: str
    merchant_id: str
    store_id: str | None = None

    @property
    def credentials(self) -> str:
        """``secret.jwt``: what follows ``Bearer`` (and keys idempotency records)."""
        return f"{self.secret}.{self.jwt}"

    def reaches(self, store: Store) -> bool:
        """True when these credentials may act on ``store``."""
        if self.store_id is not None:
            return store.id == self.store_id
        return store.merchant_id == self.merchant_id


@dataclass(slots=True)
class TransactionToken:
    """A transaction token; ``card_number`` stays private and decides the card outcome.

    A recurring token also has a ``usage_limit`` (one charge per that period at most),
    the time of its last charge, its CVV authorization (``cvv_authorize``: the
    ``data.cvv_authorize`` object of the gateway's recorded bodies) and, once renewed,
    the token it replaced (``previous_id``). Deleted, it stays readable, inactive.
    """

    id: str
    store_id: str
    payment_type: str
    type: str
    email: str | None
    metadata: Json
    data: Json
    created: dt.datetime
    card_number: str | None = None
    usage_limit: str | None = None
    active: bool = True
    last_used: dt.datetime | None = None
    previous_id: str | None = None
    cvv_authorize: Json | None = None
    #: A security code was given (``PATCH data.cvv``) since the token's last charge.
    cvv_given: bool = False

    def to_json(self) -> Json:
        """The token as ``GET /stores/{s}/tokens/{t}`` returns it."""
        data = dict(self.data)
        if self.cvv_authorize is not None:
            data["cvv_authorize"] = dict(self.cvv_authorize)
        body: Json = {
            "id": self.id,
            "store_id": self.store_id,
            "payment_type": self.payment_type,
            "type": self.type,
            "mode": "test",
            "active": self.active,
            "email": self.email,
            "usage_limit": self.usage_limit,
            "confirmed": None,
            "metadata": dict(self.metadata),
            "data": data,
            "created_on": iso(self.created),
            "last_used_on": iso(self.last_used) if self.last_used is not None else None,
        }
        if self.previous_id is not None:
            body["previous_id"] = self.previous_id
        return body

    @property
    def brand(self) -> str | None:
        """The online brand (``data.brand``), None for other payment types."""
        value = self.data.get("brand") if self.payment_type == "online" else None
        return value if isinstance(value, str) else None


@dataclass(slots=True)
class Charge:
    """A charge and everything needed to render it."""

    id: str
    store: Store
    token: TransactionToken
    amount: int
    currency: str
    created: dt.datetime
    created_on: str
    capture: bool = True
    capture_at: str | None = None
    merchant_transaction_id: str | None = None
    metadata: Json = field(default_factory=dict)
    redirect_endpoint: str | None = None
    redirect_id: str | None = None
    three_ds: Json | None = None
    ip_address: str | None = None
    status: str = "pending"
    error: Json | None = None
    charged: bool = False
    mode: str = "test"
    #: The metadata given at creation: the customer's return query carries it, not later changes.
    initial_metadata: Json = field(default_factory=dict)
    #: A partial capture's amount (None: the whole requested amount was charged).
    captured_amount: int | None = None
    authorization_expired: bool = False
    #: Waiting (``awaiting``) for the customer's 3-D Secure challenge.
    three_ds_challenge: bool = False
    #: The subscription whose payment this charge is (None for a charge of its own).
    subscription_id: str | None = None

    def needs_three_ds_challenge(self) -> bool:
        """Whether this new card charge waits for the customer's 3-D Secure challenge.

        Every fake card supports 3-D Secure; ordinary numbers pass it without a
        challenge (risk-based), :data:`CARD_THREE_DS` always asks for one. The
        modes then do what the spec says: ``skip`` never runs it, ``force`` always
        challenges, ``require`` runs it even when the token already passed it, and
        ``normal`` (the default, and the newer ``if_available``/``provided``) runs
        it only when the token has not passed it.
        """
        mode = (self.three_ds or {}).get("mode") or "normal"
        if mode == "skip":
            return False
        if mode == "force":
            return True
        challenge_card = self.token.card_number == CARD_THREE_DS
        if mode == "require":
            return challenge_card
        token_passed = (self.token.data.get("three_ds") or {}).get("status") == "successful"
        return challenge_card and not token_passed

    def to_json(self) -> Json:
        """The charge resource as one charge is answered (the Node SDK's ``ChargeItem``).

        ``three_ds`` only when the charge was made with it; ``fee_amount_formatted``
        as text; no store or merchant names (list items carry them: :meth:`to_list_json`).
        """
        cur = self.currency
        charged_amount = (self.captured_amount or self.amount) if self.charged else None
        fee = fee_for(charged_amount) if charged_amount is not None else None
        body: Json = {
            "id": self.id,
            "merchant_id": self.store.merchant_id,
            "store_id": self.store.id,
            "transaction_token_id": self.token.id,
            "transaction_token_type": self.token.type,
            "subscription_id": self.subscription_id,
            "merchant_transaction_id": self.merchant_transaction_id,
            "requested_amount": self.amount,
            "requested_currency": cur,
            "requested_amount_formatted": formatted(self.amount, cur),
            "charged_amount": charged_amount,
            "charged_currency": cur if self.charged else None,
            "charged_amount_formatted": formatted(charged_amount, cur),
            "fee_amount": fee,
            "fee_currency": cur if self.charged else None,
            "fee_amount_formatted": formatted_text(fee, cur),
            "only_direct_currency": False,
            "capture_at": self.capture_at,
            "descriptor": None,
            "descriptor_phone_number": None,
            "status": self.status,
            "error": dict(self.error) if self.error else None,
            "metadata": dict(self.metadata),
            "mode": self.mode,
            "created_on": self.created_on,
        }
        if self.three_ds is not None:
            body["three_ds"] = dict(self.three_ds)
        if self.redirect_endpoint is not None:
            body["redirect"] = {"endpoint": self.redirect_endpoint, "redirect_id": self.redirect_id}
        return body

    def to_list_json(self) -> Json:
        """A list item: the charge with its store's and merchant's names (as the SDK lists)."""
        names = (self.store.merchant_name, self.store.name)
        return {**self.to_json(), **dict(zip(LISTED_ONLY_CHARGE_FIELDS, names, strict=True))}


@dataclass(slots=True)
class WebhookConfig:
    """A webhook configuration of a store."""

    id: str
    store: Store
    triggers: list[str]
    url: str
    auth_token: str | None
    active: bool
    created: dt.datetime
    updated: dt.datetime

    def to_json(self) -> Json:
        """The configuration as the gateway sends it (``auth_token`` included)."""
        return {
            "id": self.id,
            "platform_id": PLATFORM_ID,
            "merchant_id": self.store.merchant_id,
            "store_id": self.store.id,
            "triggers": list(self.triggers),
            "url": self.url,
            "auth_token": self.auth_token,
            "active": self.active,
            "created_on": iso(self.created),
            "updated_on": iso(self.updated),
            "is_integration": False,
        }


@dataclass(slots=True, kw_only=True)
class ChargeOperation:
    """A refund or a cancel of a charge; ``pending`` until processed."""

    id: str
    charge: Charge
    created: dt.datetime
    metadata: Json = field(default_factory=dict)
    status: str = "pending"
    error: Json | None = None
    updated: dt.datetime | None = None

    def to_json(self) -> Json:
        """The fields refunds and cancels share (the SDK's ``Cancel`` is exactly these)."""
        return {
            "id": self.id,
            "charge_id": self.charge.id,
            "store_id": self.charge.store.id,
            "status": self.status,
            "error": dict(self.error) if self.error else None,
            "metadata": dict(self.metadata),
            "mode": self.charge.mode,
            "created_on": iso(self.created),
            "updated_on": iso(self.updated or self.created),
        }


@dataclass(slots=True, kw_only=True)
class CancelRecord(ChargeOperation):
    """A cancel of a charge."""


@dataclass(slots=True, kw_only=True)
class RefundRecord(ChargeOperation):
    """A refund of a charge: how much and why."""

    amount: int
    currency: str
    reason: str | None = None
    message: str | None = None

    def to_json(self) -> Json:
        """The refund resource as the gateway sends it (the SDK's ``Refund``)."""
        money = {
            "amount": self.amount,
            "currency": self.currency,
            "amount_formatted": formatted(self.amount, self.currency),
            "reason": self.reason,
            "message": self.message,
        }
        return {**ChargeOperation.to_json(self), **money}


@dataclass(slots=True)
class IdempotencyRecord:
    """The first request made with a key; ``response`` is None while it is in progress."""

    fingerprint: str
    response: tuple[int, dict[str, str], bytes] | None = None


@dataclass(slots=True)
class Attempt:
    """One try at sending a delivery: the receiver's status, or the transport's error."""

    at: str
    status: int | None
    error: str | None = None


@dataclass(slots=True)
class Delivery:
    """A webhook delivery and every attempt made to send it."""

    id: str
    webhook_id: str
    event: str
    url: str
    headers: dict[str, str]
    body: bytes
    created_on: str
    attempts: list[Attempt] = field(default_factory=list)
    state: str = "pending"  # pending, delivered, failed, canceled (by a reset)
    redelivery_of: str | None = None

    @classmethod
    def for_event(
        cls, config: WebhookConfig, event: str, data: Json, *, include_id: bool = True
    ) -> Delivery:
        """A delivery of ``event`` to ``config``'s URL, signed with its auth token."""
        delivery_id = str(uuid.uuid4())
        created_on = iso(now())
        payload: Json = {"id": delivery_id, "event": event, "created_on": created_on, "data": data}
        if not include_id:
            del payload["id"]
        headers = {"Content-Type": "application/json", "User-Agent": "paycharge-fake-gateway"}
        if config.auth_token:
            headers["Authorization"] = f"Bearer {config.auth_token}"
        body = json.dumps(payload).encode()
        return cls(delivery_id, config.id, event, config.url, headers, body, created_on)

    def again(self, *, without_id: bool = False) -> Delivery:
        """A new delivery of the same body (optionally without its ``id``), for dedupe tests."""
        body = self.body
        if without_id:
            payload = json.loads(body)
            payload.pop("id", None)
            body = json.dumps(payload).encode()
        return Delivery(
            str(uuid.uuid4()),
            self.webhook_id,
            self.event,
            self.url,
            dict(self.headers),
            body,
            iso(now()),
            redelivery_of=self.id,
        )

    def to_json(self) -> Json:
        """A summary for ``GET /_fake/deliveries`` and assertions."""
        return {
            "id": self.id,
            "webhook_id": self.webhook_id,
            "event": self.event,
            "url": self.url,
            "headers": dict(self.headers),
            "payload": json.loads(self.body),
            "created_on": self.created_on,
            "state": self.state,
            "redelivery_of": self.redelivery_of,
            "attempts": [{"at": a.at, "status": a.status, "error": a.error} for a in self.attempts],
        }

    @property
    def payload(self) -> Any:
        """The JSON body that was (or will be) sent."""
        return json.loads(self.body)
