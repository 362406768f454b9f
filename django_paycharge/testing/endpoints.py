"""Handlers of the gateway's API: tokens, charges, lists and webhook configurations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import ApiError
from .app import Request, route
from .records import AppToken, Store

if TYPE_CHECKING:
    from .app import FakeApp


def _app(request: Request) -> AppToken:
    assert request.app is not None  # the route requires credentials
    return request.app


def _store(fake: FakeApp, request: Request) -> Store:
    store = fake.state.store_for(_app(request), request.params["store"])
    merchant = request.params.get("merchant")
    if merchant is not None and merchant != store.merchant_id:
        raise ApiError(404, "NOT_FOUND", [("merchantId", "NOT_FOUND")])
    return store


@route("POST", "/tokens", auth="widget")
def create_token(fake: FakeApp, request: Request) -> Any:
    """``POST /tokens``: the browser widget's call (``Bearer jwt`` is enough)."""
    return 201, fake.state.create_token(_app(request), request.json())


@route("GET", "/stores/{store}/tokens/{token}")
def get_token(fake: FakeApp, request: Request) -> Any:
    """``GET /stores/{s}/tokens/{t}``."""
    return 200, fake.state.get_token(
        _app(request), request.params["store"], request.params["token"]
    )


@route("POST", "/charges")
def create_charge(fake: FakeApp, request: Request) -> Any:
    """``POST /charges``: the answer is ``pending``; the next status follows right after."""
    charge = fake.state.create_charge(_app(request), request.json())
    with fake.state.lock:
        body = charge.to_json()
    request.after.append(lambda: fake.state.after_create(charge.id))
    return 201, body


@route("GET", "/charges")
def list_charges(fake: FakeApp, request: Request) -> Any:
    """``GET /charges``: every store the credentials reach."""
    return 200, fake.state.list_charges(_app(request), None, request.query)


@route("GET", "/stores/{store}/charges")
def list_store_charges(fake: FakeApp, request: Request) -> Any:
    """``GET /stores/{s}/charges``."""
    store = _store(fake, request)
    return 200, fake.state.list_charges(_app(request), store, request.query)


@route("GET", "/stores/{store}/charges/{charge}")
def get_charge(fake: FakeApp, request: Request) -> Any:
    """``GET /stores/{s}/charges/{c}``; ``polling=true`` holds the answer while ``pending``."""
    state = fake.state
    charge = state.get_charge(_app(request), request.params["store"], request.params["charge"])
    if request.query.get("polling", "").lower() == "true":
        state.wait_while_pending(charge)
    with state.lock:
        return 200, charge.to_json()


@route("POST", "/stores/{store}/webhooks")
@route("POST", "/merchants/{merchant}/stores/{store}/webhooks")
def create_webhook(fake: FakeApp, request: Request) -> Any:
    """``POST [/merchants/{m}]/stores/{s}/webhooks``."""
    return 201, fake.state.create_webhook(_store(fake, request), request.json())


@route("GET", "/stores/{store}/webhooks")
@route("GET", "/merchants/{merchant}/stores/{store}/webhooks")
def list_webhooks(fake: FakeApp, request: Request) -> Any:
    """The paginated list of a store's webhook configurations."""
    return 200, fake.state.list_webhooks(_store(fake, request), request.query)


@route("GET", "/stores/{store}/webhooks/{webhook}")
@route("GET", "/merchants/{merchant}/stores/{store}/webhooks/{webhook}")
def get_webhook(fake: FakeApp, request: Request) -> Any:
    """One webhook configuration."""
    config = fake.state.webhook(_store(fake, request), request.params["webhook"])
    return 200, config.to_json()


@route("PATCH", "/stores/{store}/webhooks/{webhook}")
@route("PATCH", "/merchants/{merchant}/stores/{store}/webhooks/{webhook}")
def update_webhook(fake: FakeApp, request: Request) -> Any:
    """Change a webhook configuration (e.g. set ``active`` back to true)."""
    store = _store(fake, request)
    return 200, fake.state.update_webhook(store, request.params["webhook"], request.json())


@route("DELETE", "/stores/{store}/webhooks/{webhook}")
@route("DELETE", "/merchants/{merchant}/stores/{store}/webhooks/{webhook}")
def delete_webhook(fake: FakeApp, request: Request) -> Any:
    """Delete a webhook configuration."""
    fake.state.delete_webhook(_store(fake, request), request.params["webhook"])
    return 204, None
