"""The fake's HTTP API as a pure function: both front ends call :meth:`FakeApp.handle`.

The app knows nothing about sockets or ``responses``: it takes a method, a
path, a raw query string, headers and a body, and returns a
:class:`FakeResponse`. On the way it logs the request, applies faults and the
latency, checks credentials (``routes.py`` says which), and keeps the first
answer per idempotency key. A fault that must happen at the transport level
(a dropped connection, a client-side time-out) is reported in
``fault_action`` for the front end to act out.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from .basics import TEST_BASE_URL, ApiError
from .faults import Fault
from .messages import JSON_HEADERS, FakeResponse, Request, error_response, json_response
from .routes import match
from .state import FakeState

CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key",
    "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
    "Access-Control-Expose-Headers": "X-Request-Id, Idempotency-Status, Retry-After",
}


class FakeApp:
    """Answers requests from the state; ``base_url`` is where the front end serves the fake."""

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
        lowered = {k.lower(): v for k, v in headers.items()}
        request = Request(method.upper(), path.rstrip("/") or "/", query, lowered, body)
        if request.method == "OPTIONS":
            return _finish(FakeResponse(204, {"Access-Control-Max-Age": "600"}, b""))
        is_control = request.path.startswith("/_fake/") and not request.path.startswith(
            "/_fake/provider/"
        )
        if is_control:
            return _finish(self._dispatch(request, 0.0))
        self._log(request)
        fault = self.state.faults.pick(request.method, request.path)
        action = fault.action if fault is not None else None
        if action == "drop_before":
            return FakeResponse(0, {}, b"", "drop_before")
        if fault is not None and action == "status":
            return _finish(_fault_answer(fault))
        delay = self.state.latency
        if fault is not None and action == "latency":
            delay += fault.latency or 0.0
        if read_timeout is not None and delay > read_timeout:
            return _finish(self._time_out(request, delay, read_timeout))
        response = self._dispatch(request, delay)
        if fault is not None and action == "malformed":
            response = _malformed(response, fault)
        if action == "drop_after":
            response.fault_action = "drop_after"
        return _finish(response)

    def _log(self, request: Request) -> None:
        self.state.requests_log.append(
            {
                "method": request.method,
                "path": request.path,
                "query": request.raw_query,
                "headers": {k: v for k, v in request.headers.items() if k != "authorization"},
                "body": request.body.decode("utf-8", "replace"),
            }
        )

    def _time_out(self, request: Request, delay: float, read_timeout: float) -> FakeResponse:
        """The client gives up at its read time-out; the work goes on, as on the real gateway.

        The request runs to its end in a thread of its own, holding its
        idempotency key meanwhile: a retry with that key is answered 409
        ``IDEMPOTENCY_KEY_IN_PROGRESS`` until the work is done, then replayed.
        """
        claimed = threading.Event()

        def work() -> None:
            try:
                self._dispatch(request, delay, claimed)
            finally:
                claimed.set()  # also when it was refused before holding a key

        worker = threading.Thread(target=work, name="fake-gateway-slow-request", daemon=True)
        worker.start()
        claimed.wait(timeout=5)  # the key is held before the client can retry
        time.sleep(read_timeout)
        return FakeResponse(0, {}, b"", "timeout")

    def _dispatch(
        self, request: Request, delay: float, claimed: threading.Event | None = None
    ) -> FakeResponse:
        """Route, authenticate, replay or claim the idempotency key, run the handler.

        ``claimed`` is set once the idempotency key is held (before the delay).
        """
        try:
            route, request.params = match(request.method, request.path)
            if route.auth is not None:
                header = request.headers.get("authorization")
                request.app = self.state.authenticate(header, widget=route.auth == "widget")
            key = self._idempotency_key(request)
            if key:
                replay = self._claim(request, key)
                if replay is not None:
                    return replay
        except ApiError as exc:
            answer = error_response(exc)
            if exc.code == "IDEMPOTENCY_KEY_CONFLICT":
                answer.headers["Idempotency-Status"] = "conflicting_key"
            return answer
        if claimed is not None:
            claimed.set()
        if delay:
            time.sleep(delay)
        try:
            response = _render(route.handler(self, request))
        except ApiError as exc:
            response = error_response(exc)
        if key:
            self._settle(request, key, response)
        for hook in request.after:
            hook()
        return response

    def _idempotency_key(self, request: Request) -> str:
        if request.method not in ("POST", "PATCH") or request.app is None:
            return ""
        return request.headers.get("idempotency-key", "")

    def _claim(self, request: Request, key: str) -> FakeResponse | None:
        """The first answer given with ``key``, to replay; None once this request holds it."""
        assert request.app is not None
        fingerprint = _fingerprint(request)
        record = self.state.claim_key(request.app, key, fingerprint)
        if record is None or record.response is None:
            return None
        status, saved, raw = record.response
        # The Java SDK's IdempotencyStatus names (Idempotency-Status header).
        return FakeResponse(
            status, {**saved, "Idempotency-Status": "retrieved_idempotent_response"}, raw
        )

    def _settle(self, request: Request, key: str, response: FakeResponse) -> None:
        """Keep the answer for replays, unless it is a 5xx: then the key is free again."""
        assert request.app is not None
        kept = response.status < 500
        stored = (response.status, dict(response.headers), response.body)
        self.state.settle_key(request.app, key, stored if kept else None)
        response.headers["Idempotency-Status"] = "successfully_stored" if kept else "not_stored"


def _finish(response: FakeResponse) -> FakeResponse:
    response.headers.setdefault("X-Request-Id", str(uuid.uuid4()))
    for name, value in CORS_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _render(result: Any) -> FakeResponse:
    if isinstance(result, FakeResponse):
        return result
    status, body = result
    return json_response(status, body)


def _fault_answer(fault: Fault) -> FakeResponse:
    status = fault.status or 500
    headers: dict[str, str] = {}
    if status == 429 or fault.retry_after is not None:
        headers["Retry-After"] = str(fault.retry_after if fault.retry_after is not None else 1)
    if fault.body is None:
        return error_response(ApiError(status, None, [], headers))
    if isinstance(fault.body, bytes):
        raw = fault.body
    elif isinstance(fault.body, str):
        raw = fault.body.encode()
    else:
        raw = json.dumps(fault.body).encode()
    return FakeResponse(status, {**JSON_HEADERS, **headers}, raw)


def _malformed(response: FakeResponse, fault: Fault) -> FakeResponse:
    # Half a JSON document: what a proxy cutting the body short leaves behind.
    raw = (
        fault.body
        if isinstance(fault.body, bytes)
        else response.body[: max(1, len(response.body) // 2)]
    )
    status = response.status if 200 <= response.status < 300 else 200
    return FakeResponse(status, {**response.headers, "Content-Type": "application/json"}, raw)


def _fingerprint(request: Request) -> str:
    try:
        canonical = json.dumps(json.loads(request.body or b"null"), sort_keys=True)
    except ValueError:
        canonical = request.body.decode("utf-8", "replace")
    return f"{request.method} {request.path} {canonical}"
