"""The test's handle on a fake gateway: act as the customer and the gateway, inspect, break."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ._common import (
    CARD_SUCCESS,
    TEST_JWT,
    TEST_MERCHANT_ID,
    TEST_SECRET,
    TEST_STORE_ID,
    ApiError,
    Json,
)
from .app import FakeApp, FakeResponse
from .faults import Fault
from .records import AppToken, Delivery
from .seeding import seed_charges
from .state import FakeState
from .webhooks import Transport, django_client_transport

_CARD_DEFAULTS: Json = {
    "cardholder": "TARO YAMADA",
    "card_number": CARD_SUCCESS,
    "exp_month": 12,
    "exp_year": 2099,
    "cvv": "123",
}
_DEFAULTS: dict[str, Json] = {
    "card": _CARD_DEFAULTS,
    "online": {"brand": "paypay", "call_method": "http_post"},
    "konbini": {"customer_name": "TARO YAMADA", "convenience_store": "seven_eleven"},
    "bank_transfer": {},
}


class ChargesView(Mapping[str, Json]):
    """Read-only ``{charge_id: charge JSON}``; JSON is built on access (cheap with 100k charges)."""

    def __init__(self, state: FakeState) -> None:
        self._state = state

    def __getitem__(self, charge_id: str) -> Json:
        with self._state.lock:
            return self._state.charges[charge_id].to_json()

    def __iter__(self) -> Iterator[str]:
        with self._state.lock:
            return iter(list(self._state.charges))

    def __len__(self) -> int:
        return len(self._state.charges)


class FakeGateway:
    """Controls of one fake gateway (the ``fake_gateway`` fixture yields one)."""

    def __init__(self, state: FakeState | None = None, base_url: str | None = None) -> None:
        self.state = state or FakeState()
        self.app = FakeApp(self.state, *([base_url] if base_url else []))

    # -- where and who ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL the fake answers at."""
        return self.app.base_url

    def settings(self) -> Json:
        """The ``PAYCHARGE`` keys that point a Django project at this fake."""
        secret, jwt, store_id, merchant_id = self.state.default_credentials
        return {
            "BASE_URL": self.base_url,
            "SECRET": secret,
            "JWT": jwt,
            "STORE_ID": store_id,
            "MERCHANT_ID": merchant_id,
        }

    def add_app_token(
        self, secret: str, jwt: str, *, store_id: str | None = None, merchant_id: str | None = None
    ) -> AppToken:
        """Accept more credentials (a store token with ``store_id``, else a merchant token)."""
        return self.state.add_app_token(secret, jwt, store_id=store_id, merchant_id=merchant_id)

    def add_store(
        self, store_id: str, *, merchant_id: str = TEST_MERCHANT_ID, name: str = "Fake Store"
    ) -> None:
        """Register another store of a merchant."""
        self.state.add_store(store_id, merchant_id=merchant_id, name=name)

    # -- acting as the customer and the gateway --------------------------------------------

    def create_transaction_token(
        self,
        payment_type: str = "card",
        *,
        store_id: str | None = None,
        email: str = "buyer@example.com",
        metadata: Json | None = None,
        type: str = "one_time",
        **data: Any,
    ) -> Json:
        """A transaction token as the widget would create it; ``data`` overrides defaults."""
        body = {
            "payment_type": payment_type,
            "type": type,
            "email": email,
            "metadata": metadata or {},
            "data": {**_DEFAULTS.get(payment_type, {}), **data},
        }
        return self.state.create_token(None, body, store_id=store_id)

    def create_charge(
        self,
        transaction_token_id: str | None = None,
        amount: int = 1000,
        currency: str = "JPY",
        **fields: Any,
    ) -> Json:
        """Create a charge through the API with the default credentials (card by default)."""
        token_id = transaction_token_id or self.create_transaction_token()["id"]
        body = {"transaction_token_id": token_id, "amount": amount, "currency": currency, **fields}
        answer = self.request("POST", "/charges", body, app=self._app_for_token(token_id))
        if answer.status != 201:
            raise ApiError(answer.status, str(answer.json().get("code")))
        result: Json = answer.json()
        return result

    def _app_for_token(self, token_id: str) -> AppToken | None:
        # Charge with credentials that reach the token's store, whichever store it is.
        with self.state.lock:
            token = self.state.tokens.get(token_id)
            store = self.state.stores.get(token.store_id) if token else None
            apps = list(self.state.app_tokens.values())
        return next((a for a in apps if store is not None and a.reaches(store)), None)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        app: AppToken | None = None,
    ) -> FakeResponse:
        """Call the API without HTTP (faults apply) with ``app``'s or the default credentials."""
        secret, jwt, _, _ = self.state.default_credentials
        if app is not None:
            secret, jwt = app.secret, app.jwt
        sent = {
            "Authorization": f"Bearer {secret}.{jwt}",
            "Content-Type": "application/json",
            **(headers or {}),
        }
        path, _, query = path.partition("?")
        raw = b"" if body is None else json.dumps(body).encode()
        return self.app.handle(method, path, query, sent, raw)

    def complete(self, charge_id: str) -> Json:
        """The customer pays: ``successful`` with charged and fee amounts."""
        return self.state.complete(charge_id)

    def fail(
        self, charge_id: str, code: int = 306, message: str = "card declined", detail: str = ""
    ) -> Json:
        """The payment fails: ``failed`` with ``error``."""
        return self.state.fail(charge_id, code, message, detail)

    def expire(self, charge_id: str) -> Json:
        """The payment period ends: ``canceled``."""
        return self.state.expire(charge_id)

    def advance(self, charge_id: str) -> None:
        """Apply the ``pending`` -> next transition now (with ``processing_delay`` > 0)."""
        self.state.advance(charge_id)

    def seed(self, count: int, *, store_id: str | None = None, seed: int = 0) -> int:
        """Add ``count`` mixed charges over the last 90 days (no webhooks); returns ``count``."""
        return seed_charges(self.state, count, store_id=store_id, seed=seed)

    # -- inspecting ------------------------------------------------------------------------

    @property
    def charges(self) -> ChargesView:
        """``{charge_id: charge JSON}``."""
        return ChargesView(self.state)

    @property
    def deliveries(self) -> list[Delivery]:
        """Every webhook delivery: ``.event``, ``.payload``, ``.headers``, ``.attempts``..."""
        with self.state.lock:
            return list(self.state.deliveries)

    @property
    def requests_log(self) -> list[Json]:
        """API requests received: method, path, query, headers (no ``Authorization``), body."""
        return list(self.state.requests_log)

    @property
    def provider_log(self) -> list[Json]:
        """Submissions to the fake provider page: charge_id, method, content_type, fields."""
        return list(self.state.provider_log)

    # -- webhooks --------------------------------------------------------------------------

    def add_webhook(
        self,
        url: str,
        triggers: Iterable[str] = ("charge_updated", "charge_finished"),
        auth_token: str | None = "test-webhook-token",  # noqa: S107 - a test value
        *,
        store_id: str | None = None,
        active: bool = True,
    ) -> Json:
        """A webhook configuration of the (default) store."""
        store = self.state.stores[store_id or self.state.default_credentials[2]]
        body = {"triggers": list(triggers), "url": url, "auth_token": auth_token, "active": active}
        return self.state.create_webhook(store, body)

    def set_transport(self, transport: Transport | None) -> None:
        """How deliveries are sent: ``(url, headers, body) -> status``; raises when unreachable."""
        self.state.sender.transport = transport

    def deliver_with_django_client(self, client: Any) -> Transport:
        """Send deliveries through a Django test ``Client`` to the URL's path."""
        transport = django_client_transport(client)
        self.set_transport(transport)
        return transport

    def redeliver(self, delivery_id: str, *, without_id: bool = False) -> Delivery:
        """Send a delivery again, same body (optionally without ``id``), for dedupe tests."""
        return self.state.redeliver(delivery_id, without_id=without_id)

    def flush_deliveries(self) -> int:
        """Send deliveries recorded while no transport was set."""
        return self.state.flush_deliveries()

    @property
    def delivery_repeat(self) -> int:
        """Send every delivery this many times (same ``id``)."""
        return self.state.delivery_repeat

    @delivery_repeat.setter
    def delivery_repeat(self, value: int) -> None:
        self.state.delivery_repeat = max(1, value)

    @property
    def delivery_include_id(self) -> bool:
        """False sends deliveries without their ``id`` field."""
        return self.state.delivery_include_id

    @delivery_include_id.setter
    def delivery_include_id(self, value: bool) -> None:
        self.state.delivery_include_id = value

    # -- timing and faults -----------------------------------------------------------------

    @property
    def processing_delay(self) -> float:
        """Seconds a new charge stays ``pending`` (0: moves on right after the create answer)."""
        return self.state.processing_delay

    @processing_delay.setter
    def processing_delay(self, value: float) -> None:
        self.state.processing_delay = value

    @property
    def polling_timeout(self) -> float:
        """Longest hold of a ``polling=true`` read."""
        return self.state.polling_timeout

    @polling_timeout.setter
    def polling_timeout(self, value: float) -> None:
        self.state.polling_timeout = value

    @property
    def latency(self) -> float:
        """Seconds every API request waits first: lists, reads and writes (reset clears it)."""
        return self.state.faults.latency

    @latency.setter
    def latency(self, value: float) -> None:
        self.state.faults.latency = float(value)

    def add_fault(
        self,
        method: str,
        path_regex: str,
        *,
        action: str,
        status: int | None = None,
        retry_after: int | None = None,
        latency: float | None = None,
        count: int | None = None,
        probability: float | None = None,
        body: Any = None,
        seed: int | None = None,
    ) -> Fault:
        """Break matching requests (``method`` ``"*"`` for any; ``path_regex`` is searched)."""
        return self.state.faults.add(
            method,
            path_regex,
            action=action,
            status=status,
            retry_after=retry_after,
            latency=latency,
            count=count,
            probability=probability,
            body=body,
            seed=seed,
        )

    def clear_faults(self) -> None:
        """Remove every fault, and the latency."""
        self.state.faults.clear()

    def reset(self) -> None:
        """Forget everything (charges, tokens, webhooks, deliveries, faults, logs)."""
        self.state.reset()


__all__ = ["TEST_JWT", "TEST_SECRET", "TEST_STORE_ID", "ChargesView", "FakeGateway"]
