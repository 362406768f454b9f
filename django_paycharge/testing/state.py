"""The fake gateway's in-memory state: one thread-safe object shared by both front ends.

Every mutation happens under one re-entrant lock. Webhook deliveries are
recorded under the lock (so their order is the order of the changes) and sent
after it is released, so a receiver may call the fake back without deadlock.
"""

from __future__ import annotations

import threading
import uuid
from collections import defaultdict, deque
from typing import Any

from ._common import (
    DECLINES,
    FINAL_STATUSES,
    TEST_JWT,
    TEST_MERCHANT_ID,
    TEST_SECRET,
    TEST_STORE_ID,
    ApiError,
    Json,
    iso,
    now,
)
from .faults import FaultSet
from .lifecycle_state import LifecycleMixin, needs_three_ds_challenge
from .listing import SortedIndex, micros
from .queries import ChargeListMixin, IdempotencyMixin, IdempotencyRecord
from .records import AppToken, Charge, Store, TransactionToken, WebhookConfig
from .validation import check_charge_against_token, is_uuid, parse_charge, parse_token
from .webhook_state import WebhookStateMixin
from .webhooks import WebhookSender


class FakeState(WebhookStateMixin, ChargeListMixin, IdempotencyMixin, LifecycleMixin):
    """Stores, app tokens, transaction tokens, charges, refunds, cancels, webhooks and faults."""

    def __init__(
        self,
        *,
        secret: str = TEST_SECRET,
        jwt: str = TEST_JWT,
        store_id: str = TEST_STORE_ID,
        merchant_id: str = TEST_MERCHANT_ID,
        processing_delay: float = 0.0,
        polling_timeout: float = 2.0,
        seed: int = 0,
        sender: WebhookSender | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.processing_delay = processing_delay
        self.polling_timeout = polling_timeout
        self.sender = sender or WebhookSender()
        self.faults = FaultSet(seed)
        self.default_credentials = (secret, jwt, store_id, merchant_id)
        #: Dedupe-test switches: send each delivery this many times / with its ``id``.
        self.delivery_repeat = 1
        self.delivery_include_id = True
        self.reset()

    def reset(self) -> None:
        """Forget everything except the options and the transport; restore the default token."""
        with self.lock:
            self.stores: dict[str, Store] = {}
            self.app_tokens: dict[str, AppToken] = {}
            self.widget_tokens: dict[str, AppToken] = {}
            self.tokens: dict[str, TransactionToken] = {}
            self.charges: dict[str, Charge] = {}
            self.index = SortedIndex()
            self.store_index: defaultdict[str, SortedIndex] = defaultdict(SortedIndex)
            self.merchant_transaction_ids: dict[tuple[str, str], str] = {}
            self.idempotency: dict[tuple[str, str], IdempotencyRecord] = {}
            self.provider_log: list[Json] = []
            self.requests_log: deque[Json] = deque(maxlen=10_000)
            self.seed_calls = 0
            self.reset_webhooks()
            self.reset_lifecycle()
            self.faults.clear()
            self.delivery_repeat = 1
            self.delivery_include_id = True
            secret, jwt, store_id, merchant_id = self.default_credentials
            self.add_store(store_id, merchant_id=merchant_id, name="Test Store")
            self.add_app_token(secret, jwt, store_id=store_id)

    # -- accounts -------------------------------------------------------------------------

    def add_store(
        self,
        store_id: str,
        *,
        merchant_id: str = TEST_MERCHANT_ID,
        name: str = "Fake Store",
        merchant_name: str = "Fake Merchant",
    ) -> Store:
        """Register a store (idempotent: an existing store is returned unchanged)."""
        with self.lock:
            if store_id not in self.stores:
                self.stores[store_id] = Store(store_id, merchant_id, name, merchant_name)
            return self.stores[store_id]

    def add_app_token(
        self, secret: str, jwt: str, *, store_id: str | None = None, merchant_id: str | None = None
    ) -> AppToken:
        """Accept ``Bearer secret.jwt``: a store token with ``store_id``, else a merchant token."""
        with self.lock:
            if store_id is not None:
                store = self.add_store(store_id, merchant_id=merchant_id or TEST_MERCHANT_ID)
                merchant_id = store.merchant_id
            token = AppToken(secret, jwt, merchant_id or TEST_MERCHANT_ID, store_id)
            # The JWT has dots of its own: match the whole value, never split it.
            self.app_tokens[f"{secret}.{jwt}"] = token
            self.widget_tokens[jwt] = token
            return token

    def authenticate(self, header: str | None, *, widget: bool = False) -> AppToken:
        """The app token named by an ``Authorization`` header, or a 401 with the gateway's code.

        No header: ``AUTH_HEADER_MISSING``. A known app token (JWT) with a wrong
        or missing secret: ``INVALID_CREDENTIALS``. Anything else:
        ``INVALID_APP_TOKEN``.
        """
        if not header or not header.strip():
            raise ApiError(401, "AUTH_HEADER_MISSING")
        value = header[7:].strip() if header[:7].lower() == "bearer " else ""
        with self.lock:
            token = self.app_tokens.get(value) if value else None
            if token is None and widget and value:
                token = self.widget_tokens.get(value)
            known_jwt = bool(value) and any(
                value == jwt or value.endswith("." + jwt) for jwt in self.widget_tokens
            )
        if token is not None:
            return token
        raise ApiError(401, "INVALID_CREDENTIALS" if known_jwt else "INVALID_APP_TOKEN")

    def store_for(self, app: AppToken, store_id: str) -> Store:
        """The store at ``store_id`` if these credentials reach it (404 unknown, 403 other)."""
        store = self.stores.get(store_id) if is_uuid(store_id) else None
        if store is None:
            raise ApiError(404, "NOT_FOUND", [("storeId", "NOT_FOUND")])
        if not app.reaches(store):
            raise ApiError(403, "INVALID_PERMISSIONS", [("storeId", "NOT_ALLOWED")])
        return store

    # -- transaction tokens ---------------------------------------------------------------

    def create_token(
        self, app: AppToken | None, body: Json, *, store_id: str | None = None
    ) -> Json:
        """``POST /tokens``; ``app`` None (test controls) uses ``store_id`` or the default store."""
        if app is not None and app.store_id is None:
            reason = "MERCHANT_TOKEN_CANNOT_CREATE_TOKENS"
            raise ApiError(403, "INVALID_PERMISSIONS", [("Authorization", reason)])
        request = parse_token(body)
        sid = app.store_id if app is not None else (store_id or self.default_credentials[2])
        with self.lock:
            if sid not in self.stores:
                raise ApiError(404, "NOT_FOUND", [("store_id", "NOT_FOUND")])
            token = TransactionToken(
                str(uuid.uuid4()),
                str(sid),
                request.payment_type,
                request.type,
                request.email,
                request.metadata,
                request.data,
                now(),
                request.card_number,
            )
            self.tokens[token.id] = token
            return token.to_json()

    def get_token(self, app: AppToken, store_id: str, token_id: str) -> Json:
        """``GET /stores/{s}/tokens/{t}``."""
        with self.lock:
            store = self.store_for(app, store_id)
            token = self.tokens.get(token_id)
            if token is None or token.store_id != store.id:
                raise ApiError(404, "NOT_FOUND", [("tokenId", "NOT_FOUND")])
            return token.to_json()

    # -- charges --------------------------------------------------------------------------

    def create_charge(self, app: AppToken, body: Json) -> Charge:
        """``POST /charges``: validate, then record a ``pending`` charge."""
        request = parse_charge(body)
        with self.lock:
            token = self.tokens.get(request.token_id)
            if token is None or not app.reaches(self.stores[token.store_id]):
                raise ApiError(404, "NOT_FOUND", [("transaction_token_id", "NOT_FOUND")])
            check_charge_against_token(request, token)
            store = self.stores[token.store_id]
            mtid = request.merchant_transaction_id
            if mtid is not None and (store.id, mtid) in self.merchant_transaction_ids:
                raise ApiError(
                    409,
                    "NON_UNIQUE_MERCHANT_TRANSACTION_ID",
                    [("merchant_transaction_id", "NOT_UNIQUE")],
                )
            created = now()
            charge = Charge(
                id=str(uuid.uuid4()),
                store=store,
                token=token,
                amount=request.amount,
                currency=request.currency,
                created=created,
                created_on=iso(created),
                capture=request.capture,
                capture_at=request.capture_at,
                merchant_transaction_id=mtid,
                metadata=request.metadata,
                initial_metadata=dict(request.metadata),
                redirect_endpoint=request.redirect_endpoint,
                redirect_id=str(uuid.uuid4()) if request.redirect_endpoint else None,
                three_ds=request.three_ds,
                ip_address=request.ip_address,
            )
            self._insert(charge)
            return charge

    def _insert(self, charge: Charge) -> None:
        key = (micros(charge.created), charge.id)
        self.charges[charge.id] = charge
        self.index.add(key)
        self.store_index[charge.store.id].add(key)
        if charge.merchant_transaction_id is not None:
            self.merchant_transaction_ids[(charge.store.id, charge.merchant_transaction_id)] = (
                charge.id
            )

    def after_create(self, charge_id: str) -> None:
        """Move a new charge out of ``pending``, now or after ``processing_delay``."""
        if self.processing_delay <= 0:
            self.advance(charge_id)
            return
        timer = threading.Timer(self.processing_delay, self.advance, (charge_id,))
        timer.daemon = True
        timer.start()

    def charge(self, charge_id: str) -> Charge:
        """A charge by id, whatever its store (test controls), or a 404."""
        with self.lock:
            found = self.charges.get(charge_id)
        if found is None:
            raise ApiError(404, "NOT_FOUND", [("chargeId", "NOT_FOUND")])
        return found

    def get_charge(self, app: AppToken, store_id: str, charge_id: str) -> Charge:
        """A charge of a store the credentials reach, or a 403/404."""
        with self.lock:
            store = self.store_for(app, store_id)
            found = self.charges.get(charge_id)
            if found is None or found.store.id != store.id:
                raise ApiError(404, "NOT_FOUND", [("chargeId", "NOT_FOUND")])
            return found

    def wait_while_pending(self, charge: Charge, timeout: float | None = None) -> None:
        """Hold a ``polling=true`` read until the charge leaves ``pending`` or time runs out."""
        limit = self.polling_timeout if timeout is None else timeout
        with self.changed:
            self.changed.wait_for(lambda: charge.status != "pending", limit)

    def advance(self, charge_id: str) -> None:
        """``pending`` -> the next status for the payment type (no-op otherwise)."""
        with self.lock:
            charge = self.charges.get(charge_id)
            if charge is None or charge.status != "pending":
                return
            if charge.token.payment_type != "card":
                deliveries = self._set_status(charge, "awaiting")
            elif needs_three_ds_challenge(charge):
                charge.three_ds_challenge = True
                deliveries = self._set_status(charge, "awaiting")
            else:
                deliveries = self.card_outcome(charge)
        self.sender.send(deliveries)

    def card_outcome(self, charge: Charge) -> list[Any]:
        """Under the lock: a card charge is declined, authorized or charged (its deliveries)."""
        if (charge.token.card_number or "") in DECLINES:
            code, message = DECLINES[charge.token.card_number or ""]
            return self._set_status(charge, "failed", error=_error(code, message))
        if not charge.capture:
            return self._set_status(charge, "authorized")
        return self._set_status(charge, "successful", charged=True)

    def complete(self, charge_id: str) -> Json:
        """The customer pays (or an authorization is captured): ``successful``."""
        return self._finish(charge_id, "successful", charged=True)

    def fail(
        self, charge_id: str, code: int = 306, message: str = "card declined", detail: str = ""
    ) -> Json:
        """The payment fails: ``failed`` with the given error."""
        return self._finish(charge_id, "failed", error=_error(code, message, detail))

    def expire(self, charge_id: str) -> Json:
        """The payment period ends unpaid: ``canceled``."""
        return self._finish(charge_id, "canceled")

    def _finish(
        self, charge_id: str, status: str, *, charged: bool = False, error: Json | None = None
    ) -> Json:
        charge = self.charge(charge_id)
        with self.lock:
            if charge.status in FINAL_STATUSES:
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            deliveries = self._set_status(charge, status, charged=charged, error=error)
            body = charge.to_json()
        self.sender.send(deliveries)
        return body

    def _set_status(
        self, charge: Charge, status: str, *, charged: bool = False, error: Json | None = None
    ) -> list[Any]:
        charge.status = status
        charge.error = error
        charge.charged = charge.charged or charged
        self.changed.notify_all()
        events = ["charge_updated"]
        if status in FINAL_STATUSES or status == "authorized":
            events.append("charge_finished")
        return self.record_deliveries(charge.store, events, charge.to_json())


def _error(code: int, message: str, detail: str = "") -> Json:
    return {"code": code, "message": message, "detail": detail or message}


__all__ = ["FakeState", "IdempotencyRecord", "WebhookConfig"]
