"""The fake's one route table: every path it answers, who may call it, and its handler.

``auth`` is ``"secret"`` (``Bearer secret.jwt``), ``"widget"`` (also the
browser's ``Bearer jwt``) or None (the ``/_fake/`` controls and pages, which
need none). A pattern's ``{name}`` is one path segment, handed to the handler
in ``request.params``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import controls, endpoints, expiry, provider
from . import subscription_endpoints as subs
from .basics import ApiError

if TYPE_CHECKING:
    from .app import FakeApp
    from .messages import Request

Handler = Callable[["FakeApp", "Request"], Any]


@dataclass(frozen=True, slots=True)
class Route:
    """One method and path pattern, the credentials it needs, and its handler."""

    method: str
    pattern: str
    handler: Handler
    auth: str | None = "secret"
    regex: re.Pattern[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.pattern) + "$")
        object.__setattr__(self, "regex", regex)


def _webhook_routes() -> list[Route]:
    """Webhook configurations answer under ``/stores/{s}`` and ``/merchants/{m}/stores/{s}``."""
    rows: list[tuple[str, str, Handler]] = [
        ("POST", "", endpoints.create_webhook),
        ("GET", "", endpoints.list_webhooks),
        ("GET", "/{webhook}", endpoints.get_webhook),
        ("PATCH", "/{webhook}", endpoints.update_webhook),
        ("DELETE", "/{webhook}", endpoints.delete_webhook),
    ]
    return [
        Route(method, f"{prefix}/stores/{{store}}/webhooks{rest}", handler)
        for prefix in ("", "/merchants/{merchant}")
        for method, rest, handler in rows
    ]


_CHARGE = "/stores/{store}/charges/{charge}"
_TOKEN = "/stores/{store}/tokens/{token}"  # noqa: S105 (a path)
_SUB = "/stores/{store}/subscriptions/{subscription}"


def _subscription_routes() -> list[Route]:
    """The subscription routes of the Node SDK's ``Subscriptions`` (batches excepted)."""
    return [
        Route("POST", "/subscriptions", subs.create_subscription),
        Route("GET", "/subscriptions", subs.list_subscriptions),
        Route("POST", "/subscriptions/simulate_plan", subs.simulate_plan),
        Route("GET", "/stores/{store}/subscriptions", subs.list_subscriptions),
        Route("POST", "/stores/{store}/subscriptions/simulate_plan", subs.simulate_plan),
        Route("GET", _SUB, subs.get_subscription),
        Route("PATCH", _SUB, subs.update),
        Route("DELETE", _SUB, subs.cancel),
        Route("PATCH", f"{_SUB}/suspend", subs.suspend),
        Route("PATCH", f"{_SUB}/unsuspend", subs.unsuspend),
        Route("PATCH", f"{_SUB}/token", subs.change_token),
        Route("GET", f"{_SUB}/payments", subs.list_payments),
        Route("GET", f"{_SUB}/payments/{{payment}}", subs.get_payment),
        Route("GET", f"{_SUB}/payments/{{payment}}/charges", subs.list_charges),
        Route("GET", f"{_SUB}/charges", subs.list_charges),
    ]


ROUTES: tuple[Route, ...] = (
    # The gateway's API.
    Route("POST", "/tokens", endpoints.create_token, auth="widget"),
    Route("GET", "/tokens", endpoints.list_tokens),
    Route("GET", "/stores/{store}/tokens", endpoints.list_tokens),
    Route("GET", _TOKEN, endpoints.get_token),
    Route("PATCH", _TOKEN, endpoints.update_token, auth="widget"),
    Route("DELETE", _TOKEN, endpoints.delete_token),
    Route("POST", f"{_TOKEN}/renew", endpoints.renew_token),
    Route("POST", "/charges", endpoints.create_charge),
    Route("GET", "/charges", endpoints.list_charges),
    Route("GET", "/stores/{store}/charges", endpoints.list_store_charges),
    Route("GET", _CHARGE, endpoints.get_charge),
    Route("PATCH", _CHARGE, endpoints.update_charge),
    Route("POST", f"{_CHARGE}/capture", endpoints.capture),
    Route("POST", f"{_CHARGE}/refunds", endpoints.create_refund),
    Route("GET", f"{_CHARGE}/refunds", endpoints.list_operations),
    Route("GET", f"{_CHARGE}/refunds/{{item}}", endpoints.get_operation),
    Route("POST", f"{_CHARGE}/cancels", endpoints.create_cancel),
    Route("GET", f"{_CHARGE}/cancels", endpoints.list_operations),
    Route("GET", f"{_CHARGE}/cancels/{{item}}", endpoints.get_operation),
    Route("GET", f"{_CHARGE}/issuer_token", provider.issuer_token),
    Route("GET", f"{_CHARGE}/three_ds/issuer_token", provider.three_ds_issuer_token),
    Route("GET", f"{_CHARGE}/expiry/latest", expiry.latest_expiry),
    *_webhook_routes(),
    *_subscription_routes(),
    # The pages issuer tokens point at (a browser comes without credentials).
    Route("GET", "/_fake/provider/{charge}", provider.provider_page, auth=None),
    Route("POST", "/_fake/provider/{charge}", provider.provider_page, auth=None),
    Route("GET", "/_fake/provider/{charge}/cancel", provider.provider_cancel, auth=None),
    Route("POST", "/_fake/provider/{charge}/3ds", provider.challenge_page, auth=None),
    Route("POST", "/_fake/provider/{charge}/3ds/answer", provider.challenge_answer, auth=None),
    # The test controls.
    Route("POST", "/_fake/tokens", controls.create_token, auth=None),
    Route("POST", "/_fake/tokens/{token}/cvv_authorization", controls.set_cvv, auth=None),
    Route("POST", "/_fake/cvv_authorization", controls.cvv_authorization, auth=None),
    Route("POST", "/_fake/cvv_confirmation", controls.cvv_confirmation, auth=None),
    Route("GET", "/_fake/charges/{charge}", controls.read_charge, auth=None),
    Route("POST", "/_fake/charges/{charge}/complete", controls.complete, auth=None),
    Route("POST", "/_fake/charges/{charge}/fail", controls.fail, auth=None),
    Route("POST", "/_fake/charges/{charge}/expire", controls.expire, auth=None),
    Route(
        "POST",
        "/_fake/charges/{charge}/expire_authorization",
        controls.expire_authorization,
        auth=None,
    ),
    Route("POST", "/_fake/refunds/{refund}/fail", controls.fail_refund, auth=None),
    Route("POST", "/_fake/seed", controls.seed, auth=None),
    Route("GET", "/_fake/deliveries", controls.deliveries, auth=None),
    Route("POST", "/_fake/deliveries/{delivery}/redeliver", controls.redeliver, auth=None),
    Route("POST", "/_fake/delivery_options", controls.delivery_options, auth=None),
    Route("GET", "/_fake/faults", controls.list_faults, auth=None),
    Route("POST", "/_fake/faults", controls.add_fault, auth=None),
    Route("GET", "/_fake/latency", controls.get_latency, auth=None),
    Route("POST", "/_fake/latency", controls.set_latency, auth=None),
    Route("POST", "/_fake/reset", controls.reset, auth=None),
    Route("GET", "/_fake/clock", subs.move_clock, auth=None),
    Route("POST", "/_fake/clock", subs.move_clock, auth=None),
    Route("POST", "/_fake/app_tokens", controls.add_app_token, auth=None),
    Route("GET", "/_fake/requests", controls.requests_log, auth=None),
    Route("GET", "/_fake/provider_log", controls.provider_log, auth=None),
)

# Grouped by the first path segment: a lookup instead of trying every pattern.
_BY_SEGMENT: dict[str, list[Route]] = {}
for _route in ROUTES:
    _BY_SEGMENT.setdefault(_route.pattern.split("/", 2)[1], []).append(_route)


def match(method: str, path: str) -> tuple[Route, dict[str, str]]:
    """The route for ``method`` and ``path`` and the path's parameters; 404 or 405 otherwise."""
    path_known = False
    segment = path.split("/", 2)[1] if path.count("/") else ""
    for route in _BY_SEGMENT.get(segment, ()):
        found = route.regex.match(path)
        if found is None:
            continue
        path_known = True
        if route.method == method:
            return route, {k: v for k, v in found.groupdict().items() if v is not None}
    if path_known:
        raise ApiError(405, "METHOD_NOT_ALLOWED", [("method", method)])
    raise ApiError(404, "NOT_FOUND", [("path", "NOT_FOUND")])
