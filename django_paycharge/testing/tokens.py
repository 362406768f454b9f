"""The fake's transaction tokens: created, read, listed, updated, renewed and deleted; and what a
token allows a charge (a saved card's usage limit and CVV authorization).

A mixin of :class:`~django_paycharge.testing.state.FakeState` (the same lock, clock and
deliveries). Routes and shapes from the official SDKs (univapay-node ``TransactionTokens.ts``,
univapay-java-sdk ``responses/transactiontoken/*.json``); the refusals are the client's
:func:`~django_paycharge.client.token_vocabulary.charge_refusal`, so the rule is written once.

- A ``recurring`` token may carry a ``usage_limit``: after a charge, the next one is refused
  (``CHARGE_TOO_QUICK``) until that period has passed on the fake's clock (the one
  :meth:`~.subscriptions.SubscriptionRules.move_clock` moves), counted in days in UTC.
- A store that requires it (:meth:`TokenRules.require_cvv_authorization`) has a new recurring
  card token's CVV authorized before its first charge: ``data.cvv_authorize.status`` is
  ``pending``, then ``current`` right after the answer (``failed`` for the declining test
  cards); a charge before that is refused (``CVV_AUTHORIZATION_NOT_COMPLETED``). A ``PATCH``
  with ``data.cvv`` authorizes it again.
- A store that asks the security code again for each recurring card charge
  (:meth:`TokenRules.require_cvv_confirmation`) refuses one (``RECURRING_USAGE_REQUIRES_CVV``)
  unless a ``PATCH`` gave ``data.cvv`` since the token's last charge; the browser's app
  token (``Bearer jwt``) may send that ``PATCH``, and nothing else.
- Deleting a recurring token deactivates it (it stays readable, ``active: false``); a renewal
  makes a new token naming the old as ``previous_id`` and deactivates the old one.

Events (their ``data`` the token): ``token_created``, ``token_updated``,
``token_cvv_auth_updated``, ``token_replaced`` (the new token), ``recurring_token_deleted``.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..client.token_vocabulary import (
    CVV_AUTHORIZE_STATUSES,
    RECURRING_TOKEN_DELETED,
    RECURRING_TOKEN_TYPE,
    RECURRING_USAGE_REQUIRES_CVV,
    TOKEN_REPLACED,
    USAGE_LIMIT_REACHED,
    charge_refusal,
)
from .basics import DECLINES, ApiError, Json, now, validation_error
from .listing import page_of, parse_page_query
from .records import AppToken, Delivery, Store, TransactionToken
from .subscription_records import add_duration
from .validation import is_int, parse_token

if TYPE_CHECKING:
    from .webhook_sender import WebhookSender

#: Each usage limit as the duration after a charge before the next one.
_USAGE_PERIODS = {"daily": "P1D", "weekly": "P7D", "monthly": "P1M", "annually": "P1Y"}
_UPDATABLE_DATA = ("cardholder", "line1", "line2", "state", "city", "country", "zip")


class TokenRules:
    """Transaction tokens, for :class:`FakeState`."""

    lock: threading.RLock
    sender: WebhookSender
    tokens: dict[str, TransactionToken]
    stores: dict[str, Store]
    default_credentials: tuple[str, str, str, str]

    if TYPE_CHECKING:  # defined by FakeState and SubscriptionRules

        def store_for(self, app: AppToken, store_id: str) -> Store: ...
        def clock(self) -> dt.datetime: ...
        def later(self, work: Any, item_id: str) -> None: ...
        def record_deliveries(
            self, store: Store, events: list[str], data: Json
        ) -> list[Delivery]: ...

    # -- create and read -----------------------------------------------------------------------

    def create_token(
        self, app: AppToken | None, body: Json, *, store_id: str | None = None
    ) -> Json:
        """``POST /tokens``; ``app`` None (test controls) uses ``store_id`` or the default store.

        Call :meth:`start_cvv_authorization` after answering: a token whose CVV the store
        has authorized is ``pending`` in the answer, as on the gateway.
        """
        if app is not None and app.store_id is None:
            reason = "MERCHANT_TOKEN_CANNOT_CREATE_TOKENS"
            raise ApiError(403, "INVALID_PERMISSIONS", [("Authorization", reason)])
        request = parse_token(body)
        sid = app.store_id if app is not None else (store_id or self.default_credentials[2])
        with self.lock:
            store = self.stores.get(str(sid))
            if store is None:
                raise ApiError(404, "NOT_FOUND", [("store_id", "NOT_FOUND")])
            token = TransactionToken(
                str(uuid.uuid4()),
                store.id,
                request.payment_type,
                request.type,
                request.email,
                request.metadata,
                request.data,
                now(),
                request.card_number,
                usage_limit=request.usage_limit,
            )
            if token.type == RECURRING_TOKEN_TYPE and token.payment_type == "card":
                token.cvv_authorize = _cvv_authorize(store.cvv_authorization)
            self.tokens[token.id] = token
            body = token.to_json()
            deliveries = self.record_deliveries(store, ["token_created"], body)
        self.sender.send(deliveries)
        return body

    def token_of(self, app: AppToken, store_id: str, token_id: str) -> TransactionToken:
        """A token of a store the credentials reach, or a 403/404."""
        with self.lock:
            store = self.store_for(app, store_id)
            token = self.tokens.get(token_id)
            if token is None or token.store_id != store.id:
                raise ApiError(404, "NOT_FOUND", [("tokenId", "NOT_FOUND")])
            return token

    def get_token(self, app: AppToken, store_id: str, token_id: str) -> Json:
        """``GET /stores/{s}/tokens/{t}``."""
        with self.lock:
            return self.token_of(app, store_id, token_id).to_json()

    def list_tokens(self, app: AppToken, store: Store | None, query: Mapping[str, str]) -> Json:
        """``GET (/stores/{s})/tokens``; filters ``type``, ``mode``, ``payment_type``."""
        page = parse_page_query(query)
        wanted = {k: query[k] for k in ("type", "payment_type") if k in query}
        with self.lock:
            stores = [store] if store is not None else list(self.stores.values())
            reached = {s.id for s in stores if app.reaches(s)}
            mine = {
                t.id: t
                for t in self.tokens.values()
                if t.store_id in reached
                and all(getattr(t, k) == v for k, v in wanted.items())
                and query.get("mode", "test") == "test"
            }
            return page_of(mine, page)

    # -- changes -------------------------------------------------------------------------------

    def update_token(self, token: TransactionToken, body: Json) -> Json:
        """``PATCH``: ``email``, ``metadata``, billing ``data``; ``data.cvv`` authorizes again."""
        data = _data(body)
        email, metadata = body.get("email"), body.get("metadata")
        errors = []
        if email is not None and (not isinstance(email, str) or "@" not in email):
            errors.append(("email", "INVALID_FORMAT_EMAIL"))
        if metadata is not None and not isinstance(metadata, dict):
            errors.append(("metadata", "MUST_BE_FLAT_OBJECT"))
        cvv = data.get("cvv")
        if cvv is not None and not (str(cvv).isdigit() and 3 <= len(str(cvv)) <= 4):
            errors.append(("data.cvv", "INVALID_FORMAT"))
        if errors:
            raise validation_error(errors)
        with self.lock:
            if email is not None:
                token.email = email
            if metadata is not None:
                token.metadata = {**token.metadata, **metadata}
            token.data.update({k: data[k] for k in _UPDATABLE_DATA if k in data})
            if cvv is not None and token.cvv_authorize and token.cvv_authorize.get("enabled"):
                token.cvv_authorize.update(status="pending", charge_id=None)
            token.cvv_given = token.cvv_given or cvv is not None
            answer = token.to_json()
            deliveries = self.record_deliveries(self._store(token), ["token_updated"], answer)
        self.sender.send(deliveries)
        return answer

    def delete_token(self, token: TransactionToken) -> None:
        """``DELETE``: deactivated; a recurring token says ``recurring_token_deleted``."""
        with self.lock:
            deliveries: list[Delivery] = []
            if token.active:
                token.active = False
                if token.type == RECURRING_TOKEN_TYPE:
                    store = self._store(token)
                    deliveries = self.record_deliveries(
                        store, [RECURRING_TOKEN_DELETED], token.to_json()
                    )
        self.sender.send(deliveries)

    def renew_token(self, token: TransactionToken, body: Json) -> Json:
        """``POST .../renew``: a new token for the same card with new ``data`` (a new expiry),
        naming the old one as ``previous_id``; the old one is deactivated (``token_replaced``)."""
        data = _data(body)
        month, year = (
            data.get("exp_month", token.data.get("exp_month")),
            data.get("exp_year", token.data.get("exp_year")),
        )
        if not is_int(month) or not 1 <= month <= 12 or not is_int(year) or year < 2000:
            raise validation_error([("data.exp_month", "INVALID_FORMAT")])
        with self.lock:
            if not token.active:
                raise ApiError(400, "RECURRING_TOKEN_DISABLED", [("tokenId", "INACTIVE")])
            renewed = TransactionToken(
                str(uuid.uuid4()),
                token.store_id,
                token.payment_type,
                token.type,
                data.get("email", token.email),
                dict(token.metadata),
                {**token.data, **{k: data[k] for k in _UPDATABLE_DATA if k in data}},
                now(),
                token.card_number,
                usage_limit=token.usage_limit,
                previous_id=token.id,
                cvv_authorize=dict(token.cvv_authorize) if token.cvv_authorize else None,
            )
            renewed.data.update(exp_month=month, exp_year=year)
            token.active = False
            self.tokens[renewed.id] = renewed
            answer = renewed.to_json()
            deliveries = self.record_deliveries(self._store(token), [TOKEN_REPLACED], answer)
        self.sender.send(deliveries)
        return answer

    # -- CVV authorization ---------------------------------------------------------------------

    def require_cvv_authorization(self, required: bool = True, store_id: str | None = None) -> None:
        """Test control: the store asks new recurring card tokens' CVV to be authorized."""
        with self.lock:
            self.stores[store_id or self.default_credentials[2]].cvv_authorization = required

    def require_cvv_confirmation(self, required: bool = True, store_id: str | None = None) -> None:
        """Test control: the store asks the security code again for each recurring card charge."""
        with self.lock:
            self.stores[store_id or self.default_credentials[2]].cvv_confirmation = required

    def start_cvv_authorization(self, token_id: str) -> None:
        """After an answer: a ``pending`` CVV authorization finishes (now, or after the delay)."""
        with self.lock:
            token = self.tokens.get(token_id)
            pending = token is not None and (token.cvv_authorize or {}).get("status") == "pending"
        if pending:
            self.later(self.authorize_cvv, token_id)

    def authorize_cvv(self, token_id: str) -> None:
        """The gateway's CVV authorization of a ``pending`` token: ``current``, or ``failed``
        for the declining test cards."""
        with self.lock:
            token = self.tokens[token_id]
            if (token.cvv_authorize or {}).get("status") != "pending":
                return
            declined = (token.card_number or "") in DECLINES
            deliveries = self._set_cvv(token, "failed" if declined else "current")
        self.sender.send(deliveries)

    def set_cvv_authorization(self, token_id: str, status: str) -> Json:
        """Test control: set a token's CVV authorization status (e.g. back to ``pending``)."""
        if status not in CVV_AUTHORIZE_STATUSES:
            raise validation_error([("status", "INVALID_ENUM_VALUE")])
        with self.lock:
            token = self.tokens.get(token_id)
            if token is None or token.cvv_authorize is None:
                raise ApiError(404, "NOT_FOUND", [("tokenId", "NOT_FOUND")])
            token.cvv_authorize["enabled"] = True
            deliveries = self._set_cvv(token, status)
            answer = token.to_json()
        self.sender.send(deliveries)
        return answer

    def _set_cvv(self, token: TransactionToken, status: str) -> list[Delivery]:
        assert token.cvv_authorize is not None
        charge_id = str(uuid.uuid4()) if status == "current" else None
        token.cvv_authorize.update(status=status, charge_id=charge_id, currency="JPY")
        return self.record_deliveries(
            self._store(token), ["token_cvv_auth_updated"], token.to_json()
        )

    # -- what a token allows a charge ----------------------------------------------------------

    def check_token_charge(self, token: TransactionToken) -> None:
        """Under the lock: refuse a charge the token does not allow (the gateway's codes)."""
        cvv = token.cvv_authorize or {}
        reason = charge_refusal(
            token.type,
            active=token.active,
            cvv_enabled=bool(cvv.get("enabled")),
            cvv_status=cvv.get("status"),
        )
        if reason is not None:
            raise ApiError(400, reason, [("transaction_token_id", reason)])
        store = self._store(token)
        asks = store.cvv_confirmation and token.type == RECURRING_TOKEN_TYPE
        if asks and token.payment_type == "card" and not token.cvv_given:
            field = [("data.cvv", "REQUIRED_VALUE")]
            raise ApiError(400, RECURRING_USAGE_REQUIRES_CVV, field)
        period = _USAGE_PERIODS.get(token.usage_limit or "")
        if period and token.last_used is not None:
            allowed = add_duration(token.last_used.astimezone(dt.UTC).date(), period)
            if self.clock().astimezone(dt.UTC).date() < allowed:
                field = [("usage_limit", token.usage_limit or "")]
                raise ApiError(400, USAGE_LIMIT_REACHED, field)

    def use_token(self, token: TransactionToken) -> None:
        """Under the lock: a charge was made with ``token`` now (on the fake's clock); a
        security code given for it is used up."""
        token.last_used = self.clock()
        token.cvv_given = False

    def _store(self, token: TransactionToken) -> Store:
        return self.stores[token.store_id]


def _data(body: Json) -> Json:
    data = body.get("data")
    return data if isinstance(data, dict) else {}


def _cvv_authorize(required: bool) -> Json:
    """A new recurring card token's ``data.cvv_authorize`` (the Java SDK's recorded shape)."""
    return {
        "enabled": required,
        "status": "pending" if required else None,
        "charge_id": None,
        "credentials_id": None,
        "currency": None,
    }
