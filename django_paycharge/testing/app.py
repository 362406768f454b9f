"""The fake's HTTP API as a pure function: both front ends call :meth:`FakeApp.handle`.

The router knows nothing about sockets or ``responses``: it takes a method,
a path, a raw query string, headers and a body, and returns a
:class:`FakeResponse`. A fault that must happen at the transport level
(a dropped connection, a client-side time-out) is reported in
``fault_action`` for the front end to act out.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from ._common import TEST_BASE_URL, ApiError, Json
from .faults import Fault
from .records import AppToken
from .state import FakeState

CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key",
    "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
    "Access-Control-Expose-Headers": "X-Request-Id, Idempotency-Status, Retry-After",
}
_JSON = {"Content-Type": "application/json"}


@dataclass(slots=True)
class FakeResponse:
    """An answer. ``fault_action``: None, ``drop_before``, ``drop_after`` or ``timeout``."""

    status: int
    headers: dict[str, str]
    body: bytes
    fault_action: str | None = None

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(slots=True)
class Request:
    """What a handler sees: path parameters, the first value of each query parameter, the app."""

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    raw_query: str
    headers: Mapping[str, str]
    body: bytes
    app: AppToken | None = None
    after: list[Callable[[], None]] = field(default_factory=list)

    def json(self) -> Json:
        """The body as a JSON object, or a 400 ``INVALID_REQUEST_BODY``."""
        try:
            value = json.loads(self.body or b"null")
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise ApiError(400, "INVALID_REQUEST_BODY", [("body", "MUST_BE_JSON_OBJECT")])
        return value


Result = tuple[int, Any]  # status, JSON-able body (or a FakeResponse for raw answers)
Handler = Callable[["FakeApp", Request], Any]
# auth: "secret" (Bearer secret.jwt), "widget" (also Bearer jwt), None (test controls).
# Routes grouped by their first path segment: a lookup instead of trying every regex.
_ROUTES: dict[str, list[tuple[str, re.Pattern[str], str | None, Handler]]] = {}


def route(method: str, pattern: str, auth: str | None = "secret") -> Callable[[Handler], Handler]:
    """Register a handler for a method and a path pattern (``{name}`` is one segment)."""
    regex = re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern) + "$")

    def register(handler: Handler) -> Handler:
        segment = pattern.split("/", 2)[1]
        _ROUTES.setdefault(segment, []).append((method, regex, auth, handler))
        return handler

    return register


class FakeApp:
    """Routes requests to the state; ``base_url`` is where the front end serves the fake."""

    def __init__(self, state: FakeState, base_url: str = TEST_BASE_URL) -> None:
        self.state = state
        self.base_url = base_url.rstrip("/")

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        read_timeout: float | None = None,
    ) -> FakeResponse:
        """Answer one request. ``read_timeout``: the client's, to act out time-outs in-process."""
        method = method.upper()
        headers = {k.lower(): v for k, v in headers.items()}
        path = path.rstrip("/") or "/"
        if method == "OPTIONS":
            return self._finish(FakeResponse(204, {"Access-Control-Max-Age": "600"}, b""))
        is_control = path.startswith("/_fake/") and not path.startswith("/_fake/provider/")
        if not is_control:
            self.state.requests_log.append(
                {
                    "method": method,
                    "path": path,
                    "query": query,
                    "headers": {k: v for k, v in headers.items() if k != "authorization"},
                    "body": body.decode("utf-8", "replace"),
                }
            )
        fault = None if is_control else self.state.faults.pick(method, path)
        if fault is not None and fault.action in ("drop_before", "status"):
            if fault.action == "drop_before":
                return FakeResponse(0, {}, b"", "drop_before")
            return self._finish(_fault_answer(fault))
        delay = 0.0 if is_control else self.state.faults.latency
        if fault is not None and fault.action == "latency":
            delay += fault.latency or 0.0
        if read_timeout is not None and delay > read_timeout:
            return self._finish(
                self._time_out(method, path, query, headers, body, delay, read_timeout)
            )
        response = self._dispatch(method, path, query, headers, body, delay)
        if fault is not None and fault.action == "malformed":
            response = _malformed(response, fault)
        if fault is not None and fault.action == "drop_after":
            response.fault_action = "drop_after"
        return self._finish(response)

    def _time_out(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        delay: float,
        read_timeout: float,
    ) -> FakeResponse:
        """The client gives up at its read time-out; the work goes on, as on the real gateway.

        The request runs to its end in a thread of its own, holding its
        idempotency key meanwhile: a retry with that key is answered 409
        ``IDEMPOTENCY_KEY_IN_PROGRESS`` until the work is done, then replayed.
        """
        claimed = threading.Event()

        def work() -> None:
            try:
                self._dispatch(method, path, query, headers, body, delay, claimed)
            finally:
                claimed.set()  # also when it was refused before holding a key

        worker = threading.Thread(target=work, name="fake-gateway-slow-request", daemon=True)
        worker.start()
        claimed.wait(timeout=5)  # the key is held before the client can retry
        time.sleep(read_timeout)
        return FakeResponse(0, {}, b"", "timeout")

    def _finish(self, response: FakeResponse) -> FakeResponse:
        response.headers.setdefault("X-Request-Id", str(uuid.uuid4()))
        for name, value in CORS_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    def _dispatch(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        delay: float,
        claimed: threading.Event | None = None,
    ) -> FakeResponse:
        """Answer a routed request; ``claimed`` is set once its idempotency key is held."""
        request: Request | None = None
        key = ""
        try:
            handler, request, auth = self._match(method, path, query, headers, body)
            if auth is not None:
                request.app = self.state.authenticate(
                    headers.get("authorization"), widget=auth == "widget"
                )
            key = headers.get("idempotency-key", "") if method in ("POST", "PATCH") else ""
            if key and request.app is not None:
                record = self.state.claim_key(request.app, key, _fingerprint(method, path, body))
                if record is not None and record.response is not None:
                    status, saved, raw = record.response
                    # The Java SDK's IdempotencyStatus names (Idempotency-Status header).
                    replayed = {**saved, "Idempotency-Status": "retrieved_idempotent_response"}
                    return FakeResponse(status, replayed, raw)
            if claimed is not None:
                claimed.set()
            if delay:
                time.sleep(delay)
            try:
                response = _render(handler(self, request))
            except ApiError as exc:
                response = _error_response(exc)
            if key and request.app is not None:
                stored = (response.status, dict(response.headers), response.body)
                kept = response.status < 500
                self.state.settle_key(request.app, key, stored if kept else None)
                response.headers["Idempotency-Status"] = (
                    "successfully_stored" if kept else "not_stored"
                )
            for hook in request.after:
                hook()
            return response
        except ApiError as exc:
            answer = _error_response(exc)
            if exc.code == "IDEMPOTENCY_KEY_CONFLICT":
                answer.headers["Idempotency-Status"] = "conflicting_key"
            return answer

    def _match(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[Handler, Request, str | None]:
        path_known = False
        segment = path.split("/", 2)[1] if path.count("/") else ""
        for route_method, regex, auth, handler in _ROUTES.get(segment, ()):
            found = regex.match(path)
            if found is None:
                continue
            path_known = True
            if route_method == method:
                params = {k: v for k, v in found.groupdict().items() if v is not None}
                q = dict(parse_qsl(query, keep_blank_values=True))
                return handler, Request(method, path, params, q, query, headers, body), auth
        if path_known:
            raise ApiError(405, "METHOD_NOT_ALLOWED", [("method", method)])
        raise ApiError(404, "NOT_FOUND", [("path", "NOT_FOUND")])


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> FakeResponse:
    """A JSON answer (an empty body for 204)."""
    raw = b"" if status == 204 else json.dumps(body).encode()
    return FakeResponse(status, {**_JSON, **(headers or {})}, raw)


def _render(result: Any) -> FakeResponse:
    if isinstance(result, FakeResponse):
        return result
    status, body = result
    return json_response(status, body)


def _error_response(exc: ApiError) -> FakeResponse:
    return json_response(exc.status, exc.body(), dict(exc.headers))


def _fault_answer(fault: Fault) -> FakeResponse:
    status = fault.status or 500
    headers: dict[str, str] = {}
    if status == 429 or fault.retry_after is not None:
        headers["Retry-After"] = str(fault.retry_after if fault.retry_after is not None else 1)
    if fault.body is not None:
        raw = (
            fault.body
            if isinstance(fault.body, bytes)
            else (
                fault.body.encode()
                if isinstance(fault.body, str)
                else json.dumps(fault.body).encode()
            )
        )
        return FakeResponse(status, {**_JSON, **headers}, raw)
    return _error_response(ApiError(status, None, [], headers))


def _malformed(response: FakeResponse, fault: Fault) -> FakeResponse:
    # Half a JSON document: what a proxy cutting the body short leaves behind.
    raw = (
        fault.body
        if isinstance(fault.body, bytes)
        else response.body[: max(1, len(response.body) // 2)]
    )
    status = response.status if 200 <= response.status < 300 else 200
    return FakeResponse(status, {**response.headers, "Content-Type": "application/json"}, raw)


def _fingerprint(method: str, path: str, body: bytes) -> str:
    try:
        canonical = json.dumps(json.loads(body or b"null"), sort_keys=True)
    except ValueError:
        canonical = body.decode("utf-8", "replace")
    return f"{method} {path} {canonical}"


# The handler modules register their routes on import; they import this module.
from . import controls, endpoints, lifecycle_endpoints, provider, three_ds  # noqa: E402, F401
