"""Test controls under ``/_fake/``: act as the customer and the gateway, inspect, inject faults.

They need no credentials: the fake is a test tool and its server binds to
loopback. Never expose it. ``routes.py`` maps each path to its handler here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .basics import ApiError, validation_error
from .messages import Request
from .seeding import seed_charges

if TYPE_CHECKING:
    from .app import FakeApp

_FAULT_OPTIONS = ("status", "retry_after", "latency", "count", "probability", "body", "seed")


def read_charge(fake: FakeApp, request: Request) -> Any:
    """Any charge, whatever its store."""
    charge = fake.state.charge(request.params["charge"])
    with fake.state.lock:
        return 200, charge.to_json()


def complete(fake: FakeApp, request: Request) -> Any:
    """The customer pays: ``successful`` (409 if already final)."""
    return 200, fake.state.complete(request.params["charge"])


def fail(fake: FakeApp, request: Request) -> Any:
    """``{"code": 306, "message": "...", "detail": "..."}``, all optional: ``failed``."""
    body = request.optional_json()
    code = body.get("code", 306)
    if not isinstance(code, int):
        raise validation_error([("code", "MUST_BE_INTEGER")])
    message = str(body.get("message", "card declined"))
    return 200, fake.state.fail(
        request.params["charge"], code, message, str(body.get("detail", ""))
    )


def expire(fake: FakeApp, request: Request) -> Any:
    """The payment period ends: ``canceled``."""
    return 200, fake.state.expire(request.params["charge"])


def seed(fake: FakeApp, request: Request) -> Any:
    """``{"count": N, "store_id": optional, "seed": optional}``: bulk charges for benchmarks."""
    body = request.optional_json()
    count = body.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise validation_error([("count", "MUST_BE_NON_NEGATIVE_INTEGER")])
    store_id = body.get("store_id")
    if store_id is not None and store_id not in fake.state.stores:
        raise validation_error([("store_id", "NOT_FOUND")])
    started = time.perf_counter()
    seed_charges(fake.state, count, store_id=store_id, seed=int(body.get("seed", 0)))
    return 200, {"created": count, "seconds": round(time.perf_counter() - started, 3)}


def create_token(fake: FakeApp, request: Request) -> Any:
    """A transaction token without the JWT (for scripts); same body as ``POST /tokens``."""
    body = request.optional_json()
    state = fake.state
    token = state.create_token(None, body, store_id=body.get("store_id"))
    request.after.append(lambda: state.start_cvv_authorization(token["id"]))
    return 201, token


def _store_requirement(fake: FakeApp, request: Request) -> tuple[bool, str | None]:
    """``{"required": true, "store_id"?}`` read and checked (every store when none is named)."""
    body = request.optional_json()
    required = body.get("required", True)
    store_id = body.get("store_id")
    if not isinstance(required, bool) or (
        store_id is not None and store_id not in fake.state.stores
    ):
        raise validation_error([("required", "MUST_BE_BOOLEAN"), ("store_id", "NOT_FOUND")])
    return required, store_id


def cvv_authorization(fake: FakeApp, request: Request) -> Any:
    """``{"required": true, "store_id"?}``: the store has new recurring card tokens' CVV
    authorized before their first charge (false: not)."""
    required, store_id = _store_requirement(fake, request)
    fake.state.require_cvv_authorization(required, store_id)
    return 200, {"required": required}


def cvv_confirmation(fake: FakeApp, request: Request) -> Any:
    """``{"required": true, "store_id"?}``: the store asks the security code again for each
    charge on a recurring card token (``RECURRING_USAGE_REQUIRES_CVV`` until it is given)."""
    required, store_id = _store_requirement(fake, request)
    fake.state.require_cvv_confirmation(required, store_id)
    return 200, {"required": required}


def set_cvv(fake: FakeApp, request: Request) -> Any:
    """``{"status": "pending"}``: set a recurring card token's CVV authorization status."""
    status = str(request.optional_json().get("status", ""))
    return 200, fake.state.set_cvv_authorization(request.params["token"], status)


def deliveries(fake: FakeApp, request: Request) -> Any:
    """Every webhook delivery with its attempts."""
    fake.state.sender.wait_idle(float(request.query.get("wait", "0") or 0))
    with fake.state.lock:
        return 200, {"items": [d.to_json() for d in fake.state.deliveries]}


def redeliver(fake: FakeApp, request: Request) -> Any:
    """Send a delivery again (``{"without_id": true}`` drops the payload's ``id``)."""
    body = request.optional_json()
    copy = fake.state.redeliver(request.params["delivery"], without_id=bool(body.get("without_id")))
    return 200, copy.to_json()


def delivery_options(fake: FakeApp, request: Request) -> Any:
    """``{"repeat": 2, "include_id": false}``: duplicate deliveries, or drop their ``id``."""
    body = request.optional_json()
    state = fake.state
    if "repeat" in body:
        state.delivery_repeat = max(1, int(body["repeat"]))
    if "include_id" in body:
        state.delivery_include_id = bool(body["include_id"])
    return 200, {"repeat": state.delivery_repeat, "include_id": state.delivery_include_id}


def list_faults(fake: FakeApp, request: Request) -> Any:
    """The active faults."""
    return 200, {"items": [f.to_json() for f in fake.state.faults.list()]}


def add_fault(fake: FakeApp, request: Request) -> Any:
    """Options of ``add_fault`` (``method``, ``path``, ``action``...), or ``{"clear": true}``."""
    body = request.optional_json()
    if body.get("clear"):
        fake.state.clear_faults()
        return 200, {"items": []}
    options = {k: body[k] for k in _FAULT_OPTIONS if k in body}
    try:
        fault = fake.state.faults.add(
            str(body.get("method", "*")),
            str(body.get("path", body.get("path_regex", ".*"))),
            action=str(body.get("action")),
            **options,
        )
    except (TypeError, ValueError) as exc:
        raise ApiError(400, "VALIDATION_ERROR", [("action", str(exc))]) from exc
    return 201, fault.to_json()


def get_latency(fake: FakeApp, request: Request) -> Any:
    """The latency added to every API request, in seconds."""
    return 200, {"seconds": fake.state.latency}


def set_latency(fake: FakeApp, request: Request) -> Any:
    """``{"seconds": 0.05}``: every API request (lists, reads, writes) waits that long first."""
    seconds = request.optional_json().get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 60:
        raise validation_error([("seconds", "MUST_BE_BETWEEN_0_AND_60")])
    fake.state.latency = float(seconds)
    return 200, {"seconds": fake.state.latency}


def reset(fake: FakeApp, request: Request) -> Any:
    """Forget everything; the default credentials and store stay."""
    fake.state.reset()
    return 200, {"reset": True}


def add_app_token(fake: FakeApp, request: Request) -> Any:
    """``{"secret", "jwt", "store_id"?, "merchant_id"?}``: accept more credentials."""
    body = request.optional_json()
    if not isinstance(body.get("secret"), str) or not isinstance(body.get("jwt"), str):
        raise validation_error([("secret", "REQUIRED_VALUE"), ("jwt", "REQUIRED_VALUE")])
    token = fake.state.add_app_token(
        body["secret"],
        body["jwt"],
        store_id=body.get("store_id"),
        merchant_id=body.get("merchant_id"),
    )
    return 201, {"store_id": token.store_id, "merchant_id": token.merchant_id}


def requests_log(fake: FakeApp, request: Request) -> Any:
    """The last 10,000 API requests (``Authorization`` left out)."""
    return 200, {"items": list(fake.state.requests_log)}


def provider_log(fake: FakeApp, request: Request) -> Any:
    """What the fake provider page received: method, content type, fields."""
    return 200, {"items": list(fake.state.provider_log)}


def expire_authorization(fake: FakeApp, request: Request) -> Any:
    """The authorization of an ``authorized`` charge lapses: its capture will fail (313)."""
    return 200, fake.state.expire_authorization(request.params["charge"])


def fail_refund(fake: FakeApp, request: Request) -> Any:
    """A still-pending refund fails (use ``processing_delay`` to keep it pending)."""
    return 200, fake.state.fail_refund(request.params["refund"])
