"""The test's handle on a fake gateway: act as the customer and the gateway, inspect, break.

The handle adds what a test needs on top of the state (default token data,
charges made through the API, read-only views) and exposes the state's own
operations and settings under the same names: ``fake_gateway.complete`` *is*
``fake_gateway.state.complete``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .app import FakeApp
from .basics import CARD_SUCCESS, TEST_JWT, TEST_SECRET, TEST_STORE_ID, ApiError, Json
from .messages import FakeResponse
from .records import AppToken, Delivery
from .seeding import seed_charges
from .state import FakeState
from .webhook_sender import Transport, django_client_transport

T = TypeVar("T")

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


class StateSetting(Generic[T]):
    """A handle attribute that is the state's attribute of the same name, read and written."""

    def __init__(self, clean: Callable[[T], T] | None = None) -> None:
        self.clean = clean

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, handle: FakeGateway, owner: type | None = None) -> T:
        value: T = getattr(handle.state, self.name)
        return value

    def __set__(self, handle: FakeGateway, value: T) -> None:
        setattr(handle.state, self.name, self.clean(value) if self.clean else value)


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

    #: Seconds a new charge stays ``pending`` (0: it moves on right after the create answer).
    processing_delay = StateSetting[float]()
    #: The longest hold of a ``polling=true`` read.
    polling_timeout = StateSetting[float]()
    #: Seconds every API request waits first: lists, reads and writes (``reset`` clears it).
    latency = StateSetting[float](float)
    #: Send every delivery this many times (same ``id``), for dedupe tests.
    delivery_repeat = StateSetting[int](lambda times: max(1, times))
    #: False sends deliveries without their ``id`` field.
    delivery_include_id = StateSetting[bool]()

    def __init__(self, state: FakeState | None = None, base_url: str | None = None) -> None:
        self.state = state or FakeState()
        self.app = FakeApp(self.state, *([base_url] if base_url else []))
        # The state's operations, as they are (see FakeState for what each does).
        self.complete = self.state.complete
        self.fail = self.state.fail
        self.expire = self.state.expire
        self.advance = self.state.advance
        self.add_app_token = self.state.add_app_token
        self.add_store = self.state.add_store
        self.redeliver = self.state.redeliver
        self.flush_deliveries = self.state.flush_deliveries
        self.add_fault = self.state.faults.add
        self.clear_faults = self.state.clear_faults
        self.forget_idempotency_keys = self.state.forget_idempotency_keys
        self.move_clock = self.state.move_clock
        self.require_cvv_authorization = self.state.require_cvv_authorization
        self.set_cvv_authorization = self.state.set_cvv_authorization
        self.require_cvv_confirmation = self.state.require_cvv_confirmation
        self.reset = self.state.reset

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
            "WIDGET_JWT": self.state.widget_jwt,  # pages render it for the widget
        }

    # -- acting as the customer and the shop ---------------------------------------------------

    def create_transaction_token(
        self,
        payment_type: str = "card",
        *,
        store_id: str | None = None,
        email: str = "buyer@example.com",
        metadata: Json | None = None,
        type: str = "one_time",
        usage_limit: str | None = None,
        **data: Any,
    ) -> Json:
        """A transaction token as the widget would create it; ``data`` overrides defaults.

        A CVV authorization the store asks for (a recurring card token) follows at once,
        or after ``processing_delay``: the answer says ``pending``, as the gateway's does.
        """
        body: Json = {
            "payment_type": payment_type,
            "type": type,
            "email": email,
            "metadata": metadata or {},
            "data": {**_DEFAULTS.get(payment_type, {}), **data},
        }
        if usage_limit is not None:
            body["usage_limit"] = usage_limit
        token = self.state.create_token(None, body, store_id=store_id)
        self.state.start_cvv_authorization(token["id"])
        return token

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

    def seed(self, count: int, *, store_id: str | None = None, seed: int = 0) -> int:
        """Add ``count`` mixed charges over the last 90 days (no webhooks); returns ``count``."""
        return seed_charges(self.state, count, store_id=store_id, seed=seed)

    # -- inspecting ----------------------------------------------------------------------------

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

    # -- webhooks ------------------------------------------------------------------------------

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


__all__ = ["TEST_JWT", "TEST_SECRET", "TEST_STORE_ID", "ChargesView", "FakeGateway", "StateSetting"]
