"""Handlers of capture, metadata update, refunds and cancels, and their test controls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import Json
from .app import Request, route

if TYPE_CHECKING:
    from .app import FakeApp
    from .records import AppToken


def _app(request: Request) -> AppToken:
    assert request.app is not None  # the route requires credentials
    return request.app


def _optional_body(request: Request) -> Json:
    """The JSON object sent, or ``{}`` when there is no body (a full capture)."""
    return request.json() if request.body.strip() else {}


def _ids(request: Request) -> tuple[str, str]:
    return request.params["store"], request.params["charge"]


@route("POST", "/stores/{store}/charges/{charge}/capture")
def capture(fake: FakeApp, request: Request) -> Any:
    """Capture an authorized charge, all of it or ``amount`` of it."""
    return 200, fake.state.capture(_app(request), *_ids(request), _optional_body(request))


@route("PATCH", "/stores/{store}/charges/{charge}")
def update_charge(fake: FakeApp, request: Request) -> Any:
    """Add or change metadata keys; answers the charge."""
    return 200, fake.state.update_charge(_app(request), *_ids(request), request.json())


@route("POST", "/stores/{store}/charges/{charge}/refunds")
def create_refund(fake: FakeApp, request: Request) -> Any:
    """A ``pending`` refund; it finishes right after the answer (or after the delay)."""
    state = fake.state
    body = state.create_refund(_app(request), *_ids(request), request.json())
    request.after.append(lambda: state.after(state.process_refund, body["id"]))
    return 201, body


@route("GET", "/stores/{store}/charges/{charge}/refunds")
def list_refunds(fake: FakeApp, request: Request) -> Any:
    """The charge's refunds, paginated."""
    return 200, fake.state.list_children(_app(request), *_ids(request), "refunds", request.query)


@route("GET", "/stores/{store}/charges/{charge}/refunds/{item}")
def get_refund(fake: FakeApp, request: Request) -> Any:
    """One refund (``polling=true`` is accepted; the fake answers at once)."""
    item = request.params["item"]
    return 200, fake.state.get_child(_app(request), *_ids(request), "refunds", item)


@route("POST", "/stores/{store}/charges/{charge}/cancels")
def create_cancel(fake: FakeApp, request: Request) -> Any:
    """A ``pending`` cancel; the charge is ``canceled`` right after (or after the delay)."""
    state = fake.state
    body = state.create_cancel(_app(request), *_ids(request), _optional_body(request))
    request.after.append(lambda: state.after(state.finish_cancel, body["id"]))
    return 201, body


@route("GET", "/stores/{store}/charges/{charge}/cancels")
def list_cancels(fake: FakeApp, request: Request) -> Any:
    """The charge's cancels, paginated."""
    return 200, fake.state.list_children(_app(request), *_ids(request), "cancels", request.query)


@route("GET", "/stores/{store}/charges/{charge}/cancels/{item}")
def get_cancel(fake: FakeApp, request: Request) -> Any:
    """One cancel."""
    item = request.params["item"]
    return 200, fake.state.get_child(_app(request), *_ids(request), "cancels", item)


# -- test controls ---------------------------------------------------------------------------


@route("POST", "/_fake/charges/{charge}/expire_authorization", auth=None)
def expire_authorization(fake: FakeApp, request: Request) -> Any:
    """The authorization of an ``authorized`` charge lapses: its capture will fail (313)."""
    return 200, fake.state.expire_authorization(request.params["charge"])


@route("POST", "/_fake/refunds/{refund}/fail", auth=None)
def fail_refund(fake: FakeApp, request: Request) -> Any:
    """A still-pending refund fails (use ``processing_delay`` to keep it pending)."""
    return 200, fake.state.fail_refund(request.params["refund"])
