"""Handlers of the gateway's API: tokens, charges and their lifecycle, lists, webhooks.

Each handler takes the app and a routed :class:`Request` and returns
``(status, JSON body)`` or a :class:`FakeResponse`; ``routes.py`` says which
path and credentials lead to each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .basics import ApiError
from .messages import Request
from .records import Store, TransactionToken

if TYPE_CHECKING:
    from .app import FakeApp


def _store(fake: FakeApp, request: Request) -> Store:
    store = fake.state.store_for(request.credentials(), request.params["store"])
    merchant = request.params.get("merchant")
    if merchant is not None and merchant != store.merchant_id:
        raise ApiError(404, "NOT_FOUND", [("merchantId", "NOT_FOUND")])
    return store


def _charge_ids(request: Request) -> tuple[str, str]:
    return request.params["store"], request.params["charge"]


# -- tokens and charges ------------------------------------------------------------------------


def create_token(fake: FakeApp, request: Request) -> Any:
    """``POST /tokens``: the browser widget's call (``Bearer jwt`` is enough); a CVV
    authorization the store asks for follows right after the answer."""
    state = fake.state
    body = state.create_token(request.credentials(), request.json())
    request.after.append(lambda: state.start_cvv_authorization(body["id"]))
    return 201, body


def _token(fake: FakeApp, request: Request) -> TransactionToken:
    return fake.state.token_of(
        request.credentials(), request.params["store"], request.params["token"]
    )


def get_token(fake: FakeApp, request: Request) -> Any:
    """``GET /stores/{s}/tokens/{t}``."""
    token_id = request.params["token"]
    return 200, fake.state.get_token(request.credentials(), request.params["store"], token_id)


def list_tokens(fake: FakeApp, request: Request) -> Any:
    """``GET (/stores/{s})/tokens``."""
    app = request.credentials()
    store_id = request.params.get("store")
    store = fake.state.store_for(app, store_id) if store_id is not None else None
    return 200, fake.state.list_tokens(app, store, request.query)


def update_token(fake: FakeApp, request: Request) -> Any:
    """``PATCH /stores/{s}/tokens/{t}``; a new ``data.cvv`` is authorized right after. The
    browser's app token (``Bearer jwt``, no secret) may send a security code, and only that."""
    state = fake.state
    token = _token(fake, request)
    body = request.json()
    app = request.credentials()
    widget = request.headers.get("authorization", "").strip() == f"Bearer {app.jwt}"
    data = body.get("data")
    if widget and (set(body) - {"data"} or not isinstance(data, dict) or set(data) != {"cvv"}):
        reason = [("Authorization", "SECRET_REQUIRED")]
        raise ApiError(403, "INVALID_PERMISSIONS", reason)
    body = state.update_token(token, body)
    request.after.append(lambda: state.start_cvv_authorization(token.id))
    return 200, body


def delete_token(fake: FakeApp, request: Request) -> Any:
    """``DELETE /stores/{s}/tokens/{t}``: 204, the token deactivated."""
    fake.state.delete_token(_token(fake, request))
    return 204, None


def renew_token(fake: FakeApp, request: Request) -> Any:
    """``POST /stores/{s}/tokens/{t}/renew``: the new token, naming the old as ``previous_id``."""
    return 200, fake.state.renew_token(_token(fake, request), request.optional_json())


def create_charge(fake: FakeApp, request: Request) -> Any:
    """``POST /charges``: the answer is ``pending``; the next status follows right after."""
    state = fake.state
    charge = state.create_charge(request.credentials(), request.json())
    with state.lock:
        body = charge.to_json()
    request.after.append(lambda: state.later(state.advance, charge.id))
    return 201, body


def list_charges(fake: FakeApp, request: Request) -> Any:
    """``GET /charges``: every store the credentials reach."""
    return 200, fake.state.list_charges(request.credentials(), None, request.query)


def list_store_charges(fake: FakeApp, request: Request) -> Any:
    """``GET /stores/{s}/charges``."""
    store = _store(fake, request)
    return 200, fake.state.list_charges(request.credentials(), store, request.query)


def get_charge(fake: FakeApp, request: Request) -> Any:
    """``GET /stores/{s}/charges/{c}``; ``polling=true`` holds the answer while ``pending``."""
    state = fake.state
    charge = state.get_charge(request.credentials(), *_charge_ids(request))
    if request.query.get("polling", "").lower() == "true":
        state.wait_while_pending(charge)
    with state.lock:
        return 200, charge.to_json()


# -- the rest of a charge's life ---------------------------------------------------------------


def capture(fake: FakeApp, request: Request) -> Any:
    """Capture an authorized charge, all of it or ``amount`` of it."""
    body = request.optional_json()
    return 200, fake.state.capture(request.credentials(), *_charge_ids(request), body)


def update_charge(fake: FakeApp, request: Request) -> Any:
    """Add or change metadata keys; answers the charge."""
    body = request.json()
    return 200, fake.state.update_charge(request.credentials(), *_charge_ids(request), body)


def create_refund(fake: FakeApp, request: Request) -> Any:
    """A ``pending`` refund; it finishes right after the answer (or after the delay)."""
    state = fake.state
    body = state.create_refund(request.credentials(), *_charge_ids(request), request.json())
    request.after.append(lambda: state.later(state.process_refund, body["id"]))
    return 201, body


def create_cancel(fake: FakeApp, request: Request) -> Any:
    """A ``pending`` cancel; the charge is ``canceled`` right after (or after the delay)."""
    state = fake.state
    body = state.create_cancel(
        request.credentials(), *_charge_ids(request), request.optional_json()
    )
    request.after.append(lambda: state.later(state.finish_cancel, body["id"]))
    return 201, body


def list_operations(fake: FakeApp, request: Request) -> Any:
    """A charge's refunds or cancels (the path says which), paginated."""
    kind = request.path.rsplit("/", 1)[1]
    args = (request.credentials(), *_charge_ids(request), kind, request.query)
    return 200, fake.state.list_operations(*args)


def get_operation(fake: FakeApp, request: Request) -> Any:
    """One refund or cancel (``polling=true`` is accepted; the fake answers at once)."""
    kind = request.path.rsplit("/", 2)[1]
    args = (request.credentials(), *_charge_ids(request), kind, request.params["item"])
    return 200, fake.state.get_operation(*args)


# -- webhook configurations (also under /merchants/{m}) ----------------------------------------


def create_webhook(fake: FakeApp, request: Request) -> Any:
    """``POST [/merchants/{m}]/stores/{s}/webhooks``."""
    return 201, fake.state.create_webhook(_store(fake, request), request.json())


def list_webhooks(fake: FakeApp, request: Request) -> Any:
    """The paginated list of a store's webhook configurations."""
    return 200, fake.state.list_webhooks(_store(fake, request), request.query)


def get_webhook(fake: FakeApp, request: Request) -> Any:
    """One webhook configuration."""
    config = fake.state.webhook(_store(fake, request), request.params["webhook"])
    return 200, config.to_json()


def update_webhook(fake: FakeApp, request: Request) -> Any:
    """Change a webhook configuration (e.g. set ``active`` back to true)."""
    store = _store(fake, request)
    return 200, fake.state.update_webhook(store, request.params["webhook"], request.json())


def delete_webhook(fake: FakeApp, request: Request) -> Any:
    """Delete a webhook configuration."""
    fake.state.delete_webhook(_store(fake, request), request.params["webhook"])
    return 204, None
