"""HTTP transport: session, credentials, time-outs, retries, error mapping and logging.

Credentials live in one private header dict that is passed per request: they
are never put on the session (which may be the caller's, shared by other
clients), never logged and never part of a ``repr`` or an exception message.
``urllib3`` logs only the request line at DEBUG, never headers; ``requests``
logs nothing of its own.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar
from urllib.parse import urlencode

import requests
import requests.auth

from django_paycharge.exceptions import (
    APIError,
    InvalidResponseError,
    NetworkError,
)

from ._errors import api_error, network_error, parse_retry_after
from ._parse import ShapeError
from ._throttle import Throttle

T = TypeVar("T")

logger = logging.getLogger("django_paycharge.client")

#: Statuses worth another attempt: the gateway did not (or may not) have done the work.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: The only 409 that is retried: the same key's first request is still running.
IN_PROGRESS_CODE = "IDEMPOTENCY_KEY_IN_PROGRESS"
#: Read time-out of an attempt whose deadline has (almost) passed: it fails at once.
_MIN_READ_TIMEOUT = 0.001
#: Query parameters whose values are personal data, masked in the log line.
_MASKED_PARAMS = frozenset({"email", "phone", "name", "last_four"})


class Transport:
    """Sends one logical request, with retries, and returns the parsed 2xx body."""

    __slots__ = (
        "_auth",
        "_auth_headers",
        "_redact",
        "backoff_base",
        "backoff_max",
        "base_url",
        "max_retries",
        "max_retry_after",
        "random",
        "session",
        "sleep",
        "throttle",
        "timeout",
    )

    def __init__(
        self,
        *,
        base_url: str,
        secret: str,
        jwt: str,
        timeout: tuple[float, float],
        max_retries: int,
        session: requests.Session,
        backoff_base: float,
        backoff_max: float,
        max_retry_after: float,
        user_agent: str,
        sleep: Callable[[float], object],
        random: Callable[[], float],
        throttle: Throttle,
    ) -> None:
        self.base_url = base_url
        self.throttle = throttle
        self.timeout = timeout
        self.max_retries = max_retries
        self.session = session
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.random = random
        self._auth = _BearerAuth(f"{secret}.{jwt}")
        self._auth_headers = {
            "Accept": "application/json",
            "User-Agent": user_agent,
        }
        # Values that must never leave through an error text, even if the
        # gateway echoed them back in an error reason.
        self._redact = tuple(v for v in (f"{secret}.{jwt}", secret, jwt) if v)

    def __repr__(self) -> str:
        return f"Transport(base_url={self.base_url!r})"

    def request(
        self,
        method: str,
        path: str,
        parse: Callable[[Any], T],
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
        deadline: float | None = None,
    ) -> T:
        """Send ``method path``, retrying what is safe to retry, and parse the 2xx body.

        A GET, or a request carrying an idempotency key, is retried on network
        errors and on :data:`RETRY_STATUSES`; any other request only when the
        gateway certainly did not process it (429, connect time-out).

        ``deadline`` (a :func:`time.monotonic` value) bounds the whole call:
        each attempt's read time-out is at most the time left, and no retry
        starts, nor retry delay is slept, past it. The call can then overrun
        the deadline by one connect time-out at most.
        """
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
        safe = method == "GET" or idempotency_key is not None
        timeout = self.timeout
        if read_timeout is not None:
            timeout = (timeout[0], max(timeout[1], read_timeout))
        url = self.base_url + path
        log_path = _log_path(path, params)
        attempts = self.max_retries + 1

        limited = False
        for attempt in range(attempts):
            if deadline is not None:
                left = deadline - time.monotonic()
                timeout = (timeout[0], max(min(timeout[1], left), _MIN_READ_TIMEOUT))
            retry_after: float | None = None
            # Every request of this client, whichever thread sends it, shares one limit.
            self.throttle.acquire(self.sleep, paused=limited)
            limited = False
            started = time.perf_counter()
            try:
                response = self.session.request(
                    method,
                    url,
                    params=params,
                    data=data,
                    # Never a local of this frame: tracebacks shown with their locals
                    # (Django's DEBUG page, HTML error e-mails) would print the credentials.
                    headers=self._headers(data is not None, idempotency_key),
                    # An explicit auth also stops requests from replacing our header
                    # with credentials it finds in ~/.netrc for the gateway's host.
                    auth=self._auth,
                    timeout=timeout,
                    allow_redirects=False,
                )
            except requests.RequestException as exc:
                self.throttle.release()
                error: NetworkError | APIError = network_error(exc, method)
                error.__cause__ = _without_tracebacks(exc)
                retryable = isinstance(exc, requests.ConnectTimeout) or (
                    safe and _is_transient(exc)
                )
                status: int | str = type(exc).__name__
                request_id = None
            except BaseException:
                self.throttle.release()
                raise
            else:
                status = response.status_code
                request_id = response.headers.get("X-Request-Id") or response.headers.get(
                    "Request-Id"
                )
                if 200 <= status < 300:
                    self.throttle.release()
                    _log(logging.DEBUG, method, log_path, status, started, attempt, request_id)
                    return self._parse(response, parse, request_id)
                error = api_error(response, request_id, self._clean)
                retryable = (
                    safe and status in RETRY_STATUSES and not error.permanent
                ) or status == 429
                if status == 409 and error.code == IN_PROGRESS_CODE and idempotency_key:
                    retryable = True
                if retryable:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                if retry_after is None and status == 429:
                    retry_after = self._backoff(attempt)
                # A 429 slows every request of the client down, not only this one.
                limited = status == 429
                self.throttle.release(limited=limited, pause=retry_after or 0.0)

            last = attempt + 1 >= attempts
            if retry_after is not None and retry_after > self.max_retry_after:
                # Sleeping that long would stall a web request: give up now.
                retryable = False
            will_retry = retryable and not last
            if will_retry and deadline is not None:
                delay = retry_after if retry_after is not None else 0.0
                will_retry = time.monotonic() + delay < deadline
            # INFO for a plain 4xx answer (the caller's problem); WARNING when
            # the gateway or the network is in trouble.
            quiet = isinstance(status, int) and status < 500 and not will_retry
            level = logging.INFO if quiet else logging.WARNING
            _log(level, method, log_path, status, started, attempt, request_id)
            if not will_retry:
                raise error
            if retry_after is None:
                retry_after = self._backoff(attempt)
            if deadline is not None and time.monotonic() + retry_after >= deadline:
                raise error
            self.sleep(retry_after)
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int) -> float:
        """Full jitter: a random delay up to ``backoff_base * 2**attempt``, capped."""
        return float(self.random() * min(self.backoff_max, self.backoff_base * 2**attempt))

    def _headers(self, json_body: bool, idempotency_key: str | None) -> dict[str, str]:
        headers = dict(self._auth_headers)
        if json_body:
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    def _parse(self, response: requests.Response, parse: Callable[[Any], T], rid: str | None) -> T:
        try:
            payload = json.loads(response.content, parse_float=Decimal)
        except (ValueError, RecursionError):
            raise InvalidResponseError(
                f"{InvalidResponseError.default_message} The body is not JSON "
                f"(HTTP {response.status_code}).",
                http_status=response.status_code,
                request_id=rid,
            ) from None
        try:
            return parse(payload)
        except (ShapeError, ValueError, TypeError) as exc:
            raise InvalidResponseError(
                f"{InvalidResponseError.default_message} {self._clean(str(exc))} "
                f"(HTTP {response.status_code}).",
                http_status=response.status_code,
                request_id=rid,
            ) from None

    def _clean(self, text: str) -> str:
        for secret in self._redact:
            text = text.replace(secret, "[redacted]")
        return text


def _without_tracebacks(exc: BaseException) -> BaseException:
    """``exc`` with the tracebacks of its whole chain dropped; their messages stay.

    The frames of ``requests`` and ``urllib3`` in them hold the request's
    headers, credentials included, as local variables, and Django's DEBUG
    page shows the locals of every chained exception's frames.
    """
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return exc


def _is_transient(exc: requests.RequestException) -> bool:
    return isinstance(
        exc, requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError
    )


class _BearerAuth(requests.auth.AuthBase):
    """Sets ``Authorization: Bearer <secret>.<jwt>``; its repr never shows the value."""

    __slots__ = ("_value",)

    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self._value
        return request

    def __repr__(self) -> str:
        return "_BearerAuth(***)"


def _log_path(path: str, params: Mapping[str, str] | None) -> str:
    if not params:
        return path
    shown = {k: ("***" if k in _MASKED_PARAMS else v) for k, v in params.items()}
    return f"{path}?{urlencode(shown)}"


def _log(
    level: int,
    method: str,
    path: str,
    status: int | str,
    started: float,
    attempt: int,
    request_id: str | None,
) -> None:
    if not logger.isEnabledFor(level):
        return
    duration_ms = (time.perf_counter() - started) * 1000
    logger.log(
        level,
        "%s %s -> %s in %.0f ms (attempt %d, request id %s)",
        method,
        path,
        status,
        duration_ms,
        attempt + 1,
        request_id or "-",
        extra={
            "paycharge_method": method,
            "paycharge_path": path,
            "paycharge_status": status,
            "paycharge_duration_ms": duration_ms,
            "paycharge_attempt": attempt + 1,
            "paycharge_request_id": request_id,
        },
    )
