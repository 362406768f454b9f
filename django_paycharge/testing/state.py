"""The fake gateway's state: one thread-safe object that both front ends share.

Every mutation happens under one re-entrant lock. Webhook deliveries are
recorded under the lock (so their order is the order of the changes) and sent
after it is released, so a receiver may call the fake back without deadlock.

The rules of a charge's life after its creation (capture, refunds, cancels)
are in :mod:`.lifecycle`, a mixin of the state.
"""

from __future__ import annotations

import secrets
import threading
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from typing import Any

from ..client.vocabulary import (
    FINAL_STATUSES,
)
from .basics import (
    DECLINES,
    TEST_JWT,
    TEST_MERCHANT_ID,
    TEST_SECRET,
    TEST_STORE_ID,
    TEST_WIDGET_JWT,
    ApiError,
    Json,
    failure,
    iso,
    now,
)
from .faults import FaultSet
from .lifecycle import LifecycleRules
from .listing import SortedIndex, micros, page_of, paginate, parse_page_query
from .records import (
    AppToken,
    CancelRecord,
    Charge,
    Delivery,
    IdempotencyRecord,
    RefundRecord,
    Store,
    TransactionToken,
    WebhookConfig,
)
from .subscriptions import SubscriptionRules
from .tokens import TokenRules
from .validation import (
    check_charge_against_token,
    is_uuid,
    parse_charge,
    parse_webhook,
)
from .webhook_sender import WebhookSender

_LIST_FILTERS = ("currency", "mode", "transaction_token_id", "status", "merchant_transaction_id")


class FakeState(LifecycleRules, SubscriptionRules, TokenRules):
    """Stores, app tokens, transaction tokens, charges, refunds, cancels, webhooks and faults."""

    def __init__(
        self,
        *,
        secret: str = TEST_SECRET,
        jwt: str = TEST_JWT,
        store_id: str = TEST_STORE_ID,
        merchant_id: str = TEST_MERCHANT_ID,
        widget_jwt: str = TEST_WIDGET_JWT,
        processing_delay: float = 0.0,
        polling_timeout: float = 2.0,
        seed: int = 0,
        sender: WebhookSender | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        #: Seconds a new charge, refund or cancel stays ``pending``.
        self.processing_delay = processing_delay
        #: The longest hold of a ``polling=true`` read.
        self.polling_timeout = polling_timeout
        self.sender = sender or WebhookSender()
        self.faults = FaultSet(seed)
        self.default_credentials = (secret, jwt, store_id, merchant_id)
        #: The browser app token's JWT (the widget's): ``POST /tokens`` with ``Bearer <it>``.
        self.widget_jwt = widget_jwt
        self.reset()

    def reset(self) -> None:
        """Forget everything except the options and the transport; restore the default token."""
        with self.lock:
            self.sender.cancel_pending()
            self.stores: dict[str, Store] = {}
            self.app_tokens: dict[str, AppToken] = {}
            self.widget_tokens: dict[str, AppToken] = {}
            self.tokens: dict[str, TransactionToken] = {}
            self.charges: dict[str, Charge] = {}
            self.index = SortedIndex()
            self.store_index: defaultdict[str, SortedIndex] = defaultdict(SortedIndex)
            self.merchant_transaction_ids: dict[tuple[str, str], str] = {}
            self.refunds: dict[str, RefundRecord] = {}
            self.cancels: dict[str, CancelRecord] = {}
            self.charge_refunds: defaultdict[str, list[str]] = defaultdict(list)
            self.charge_cancels: defaultdict[str, list[str]] = defaultdict(list)
            self.webhooks: dict[str, WebhookConfig] = {}
            self.deliveries: list[Delivery] = []
            self.idempotency: dict[tuple[str, str], IdempotencyRecord] = {}
            self.provider_log: list[Json] = []
            self.requests_log: deque[Json] = deque(maxlen=10_000)
            self.seed_calls = 0
            self.reset_subscriptions()
            self.clear_faults()
            #: Dedupe-test switches: send each delivery this many times / with its ``id``.
            self.delivery_repeat = 1
            self.delivery_include_id = True
            secret, jwt, store_id, merchant_id = self.default_credentials
            self.add_store(store_id, merchant_id=merchant_id, name="Test Store")
            self.add_app_token(secret, jwt, store_id=store_id)
            # A browser token: its secret is never given out, so only ``Bearer jwt`` works.
            self.add_app_token(secrets.token_urlsafe(24), self.widget_jwt, store_id=store_id)

    def clear_faults(self) -> None:
        """Remove every fault, and the latency."""
        self.faults.clear()
        #: Seconds every API request waits before it is answered: the gateway's distance.
        self.latency = 0.0

    # -- accounts ------------------------------------------------------------------------------

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
            self.app_tokens[token.credentials] = token
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

    # -- idempotency keys ----------------------------------------------------------------------

    def claim_key(self, app: AppToken, key: str, fingerprint: str) -> IdempotencyRecord | None:
        """The finished record to replay, None after claiming the key, or a 409."""
        with self.lock:
            record = self.idempotency.get((app.credentials, key))
            if record is None:
                self.idempotency[(app.credentials, key)] = IdempotencyRecord(fingerprint)
                return None
            if record.fingerprint != fingerprint:
                reason = [("Idempotency-Key", "DIFFERENT_REQUEST")]
                raise ApiError(409, "IDEMPOTENCY_KEY_CONFLICT", reason)
            if record.response is None:
                reason = [("Idempotency-Key", "IN_PROGRESS")]
                raise ApiError(409, "IDEMPOTENCY_KEY_IN_PROGRESS", reason)
            return record

    def forget_idempotency_keys(self) -> int:
        """Test control: the finished idempotency records expire (a key in progress stays).

        A request sent again with an old key is then answered as a new one: the
        gateway's documented refusals (``ALREADY_CAPTURED``, a refund that now
        exceeds what is left) instead of the first answer. Returns how many went.
        """
        with self.lock:
            done = [k for k, record in self.idempotency.items() if record.response is not None]
            for key in done:
                del self.idempotency[key]
            return len(done)

    def settle_key(
        self, app: AppToken, key: str, response: tuple[int, dict[str, str], bytes] | None
    ) -> None:
        """Store the answer for replays, or free the key (``None``) when no work was done."""
        with self.lock:
            if response is None:
                self.idempotency.pop((app.credentials, key), None)
            else:
                self.idempotency[(app.credentials, key)].response = response

    # -- charges -------------------------------------------------------------------------------

    def create_charge(self, app: AppToken, body: Json) -> Charge:
        """``POST /charges``: validate, then record a ``pending`` charge."""
        request = parse_charge(body)
        with self.lock:
            token = self.tokens.get(request.token_id)
            if token is None or not app.reaches(self.stores[token.store_id]):
                raise ApiError(404, "NOT_FOUND", [("transaction_token_id", "NOT_FOUND")])
            check_charge_against_token(request, token)
            self.check_token_charge(token)
            store = self.stores[token.store_id]
            mtid = request.merchant_transaction_id
            if mtid is not None and (store.id, mtid) in self.merchant_transaction_ids:
                reason = [("merchant_transaction_id", "NOT_UNIQUE")]
                raise ApiError(409, "NON_UNIQUE_MERCHANT_TRANSACTION_ID", reason)
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
            self.add_charge(charge)
            self.use_token(token)
            return charge

    def add_charge(self, charge: Charge) -> None:
        """Record a new charge (under the lock) so reads and lists find it."""
        key = (micros(charge.created), charge.id)
        self.charges[charge.id] = charge
        self.index.add(key)
        self.store_index[charge.store.id].add(key)
        mtid = charge.merchant_transaction_id
        if mtid is not None:
            self.merchant_transaction_ids[(charge.store.id, mtid)] = charge.id

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

    def list_charges(self, app: AppToken, store: Store | None, query: Mapping[str, str]) -> Json:
        """A page of charges of one store, or of every store the credentials reach."""
        page = parse_page_query(query)
        wanted = {k: query[k] for k in _LIST_FILTERS if k in query}
        if "currency" in wanted:
            wanted["currency"] = wanted["currency"].upper()
        with self.lock:
            if store is not None:
                index, scope = self.store_index[store.id], {store.id}
            else:
                scope = {s.id for s in self.stores.values() if app.reaches(s)}
                index = self.index
            whole = store is not None or len(scope) == len(self.stores)
            charges = self.charges

            def accept(cid: str) -> bool:
                c = charges[cid]
                return (whole or c.store.id in scope) and all(
                    _list_field(c, k) == v for k, v in wanted.items()
                )

            def cursor_key(cid: str) -> tuple[int, str] | None:
                c = charges.get(cid)
                return (micros(c.created), c.id) if c is not None and c.store.id in scope else None

            unfiltered = whole and not wanted
            result = paginate(index.sorted_keys(), page, cursor_key, None if unfiltered else accept)
            items = [charges[cid].to_list_json() for cid in result.ids]
        return {"items": items, "has_more": result.has_more, "total_hits": result.total_hits}

    def wait_while_pending(self, charge: Charge, timeout: float | None = None) -> None:
        """Hold a ``polling=true`` read until the charge leaves ``pending`` or time runs out."""
        limit = self.polling_timeout if timeout is None else timeout
        with self.changed:
            self.changed.wait_for(lambda: charge.status != "pending", limit)

    def later(self, work: Callable[[str], Any], item_id: str) -> None:
        """Run ``work(item_id)`` now, or after ``processing_delay`` on a timer thread."""
        if self.processing_delay <= 0:
            work(item_id)
            return
        timer = threading.Timer(self.processing_delay, work, (item_id,))
        timer.daemon = True
        timer.start()

    # -- a charge's status ---------------------------------------------------------------------

    def advance(self, charge_id: str) -> None:
        """``pending`` -> the next status for the payment type (no-op otherwise)."""
        with self.lock:
            charge = self.charges.get(charge_id)
            if charge is None or charge.status != "pending":
                return
            if charge.token.payment_type != "card":
                deliveries = self._set_status(charge, "awaiting")
            elif charge.needs_three_ds_challenge():
                charge.three_ds_challenge = True
                deliveries = self._set_status(charge, "awaiting")
            else:
                deliveries = self._card_outcome(charge)
        self.sender.send(deliveries)

    def complete(self, charge_id: str) -> Json:
        """The customer pays (or an authorization is captured): ``successful``."""
        return self._finish(charge_id, "successful", charged=True)

    def fail(
        self, charge_id: str, code: int = 306, message: str = "card declined", detail: str = ""
    ) -> Json:
        """The payment fails: ``failed`` with the given error."""
        return self._finish(charge_id, "failed", error=failure(code, message, detail))

    def expire(self, charge_id: str) -> Json:
        """The payment period ends unpaid: ``canceled``."""
        return self._finish(charge_id, "canceled")

    def finish_three_ds(self, charge_id: str, *, passed: bool) -> Charge:
        """The customer's challenge ends: the card is charged as usual, or fails (error 358)."""
        charge = self.charge(charge_id)
        with self.lock:
            if charge.status != "awaiting" or not charge.three_ds_challenge:
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            charge.three_ds_challenge = False
            if passed:
                deliveries = self._card_outcome(charge)
            else:
                error = failure(358, "3-D Secure authentication failed")
                deliveries = self._set_status(charge, "failed", error=error)
            deliveries += self.subscription_charge_settled(charge)
        self.sender.send(deliveries)
        return charge

    def _card_outcome(self, charge: Charge) -> list[Delivery]:
        """Under the lock: a card charge is declined, authorized or charged (its deliveries)."""
        if (charge.token.card_number or "") in DECLINES:
            code, message = DECLINES[charge.token.card_number or ""]
            return self._set_status(charge, "failed", error=failure(code, message))
        if not charge.capture:
            return self._set_status(charge, "authorized")
        return self._set_status(charge, "successful", charged=True)

    def _finish(
        self, charge_id: str, status: str, *, charged: bool = False, error: Json | None = None
    ) -> Json:
        charge = self.charge(charge_id)
        with self.lock:
            if charge.status in FINAL_STATUSES:
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            deliveries = self._set_status(charge, status, charged=charged, error=error)
            deliveries += self.subscription_charge_settled(charge)
            body = charge.to_json()
        self.sender.send(deliveries)
        return body

    def _set_status(
        self, charge: Charge, status: str, *, charged: bool = False, error: Json | None = None
    ) -> list[Delivery]:
        charge.status = status
        charge.error = error
        charge.charged = charge.charged or charged
        self.changed.notify_all()
        events = ["charge_updated"]
        if status in FINAL_STATUSES or status == "authorized":
            events.append("charge_finished")
        return self.record_deliveries(charge.store, events, charge.to_json())

    # -- webhook configurations and deliveries -------------------------------------------------

    def create_webhook(self, store: Store, body: Json) -> Json:
        """``POST /stores/{s}/webhooks``."""
        fields = parse_webhook(body)
        created = now()
        config = WebhookConfig(
            id=str(uuid.uuid4()),
            store=store,
            triggers=list(fields["triggers"]),
            url=fields["url"],
            auth_token=fields.get("auth_token"),
            active=fields["active"],
            created=created,
            updated=created,
        )
        with self.lock:
            if any(c.store.id == store.id and c.url == config.url for c in self.webhooks.values()):
                raise ApiError(409, "WEBHOOK_URL_EXISTS", [("url", "WEBHOOK_URL_EXISTS")])
            self.webhooks[config.id] = config
        return config.to_json()

    def webhook(self, store: Store, webhook_id: str) -> WebhookConfig:
        """One configuration of ``store``, or a 404."""
        with self.lock:
            config = self.webhooks.get(webhook_id)
        if config is None or config.store.id != store.id:
            raise ApiError(404, "NOT_FOUND", [("webhookId", "NOT_FOUND")])
        return config

    def update_webhook(self, store: Store, webhook_id: str, body: Json) -> Json:
        """``PATCH``: change any of triggers, url, auth_token, active."""
        fields = parse_webhook(body, partial=True)
        with self.lock:
            config = self.webhook(store, webhook_id)
            for name, value in fields.items():
                setattr(config, name, value)
            config.updated = now()
            return config.to_json()

    def delete_webhook(self, store: Store, webhook_id: str) -> None:
        """``DELETE``."""
        with self.lock:
            self.webhooks.pop(self.webhook(store, webhook_id).id)

    def list_webhooks(self, store: Store, query: Mapping[str, str]) -> Json:
        """A paginated list of the store's configurations."""
        page = parse_page_query(query)
        with self.lock:
            mine = {c.id: c for c in self.webhooks.values() if c.store.id == store.id}
            return page_of(mine, page)

    def record_deliveries(self, store: Store, events: list[str], data: Json) -> list[Delivery]:
        """Deliveries for each active configuration listening to each event (under the lock)."""
        out: list[Delivery] = []
        for event in events:
            for config in self.webhooks.values():
                if config.store.id != store.id or not config.active or event not in config.triggers:
                    continue
                first = Delivery.for_event(config, event, data, include_id=self.delivery_include_id)
                out.append(first)
                out.extend(first.again() for _ in range(self.delivery_repeat - 1))
        self.deliveries.extend(out)
        return out

    def redeliver(self, delivery_id: str, *, without_id: bool = False) -> Delivery:
        """Send a recorded delivery again, same body (optionally without its ``id``)."""
        with self.lock:
            original = next((d for d in self.deliveries if d.id == delivery_id), None)
            if original is None:
                raise ApiError(404, "NOT_FOUND", [("deliveryId", "NOT_FOUND")])
            copy = original.again(without_id=without_id)
            self.deliveries.append(copy)
        self.sender.send([copy])
        return copy

    def flush_deliveries(self) -> int:
        """Send every still-pending delivery (recorded while no transport was set)."""
        with self.lock:
            pending = [d for d in self.deliveries if d.state == "pending" and not d.attempts]
        self.sender.send(pending)
        return len(pending)


def _list_field(charge: Charge, name: str) -> Any:
    if name == "transaction_token_id":
        return charge.token.id
    return getattr(charge, name)
