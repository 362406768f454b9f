"""HTTP transport: one request, attempt after attempt, until an answer or a reason to stop.

The rules live apart: which failures are retried and after how long in
:mod:`.retries`, the exception for each failure in ``_errors``, the log line in
:mod:`.request_log`.

Credentials live in the client's private auth object (``_BearerAuth``), passed
per request: they are never put on the session (which may be the caller's, shared by other
clients), never logged and never part of a ``repr`` or an exception message.
``urllib3`` logs only the request line at DEBUG, never headers; ``requests``
logs nothing of its own.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import requests
import requests.auth

from django_paycharge import __version__
from django_paycharge.exceptions import APIError, NetworkError, NotSentError, gettext_noop

from ._errors import api_error, network_error, read_body, without_tracebacks
from .backoff import Backoff
from .observe import GatewayAttempt, GatewayCall, Observer, route_of, safe_code
from .options import ClientOptions
from .request_log import failure_level, log_attempt, log_path
from .retries import (
    parse_retry_after,
    retry_decision,
    retryable_answer,
    retryable_failure,
)
from .throttle import Throttle

T = TypeVar("T")

#: Read time-out of an attempt whose deadline has (almost) passed: it fails at once.
_MIN_READ_TIMEOUT = 0.001


@dataclass(frozen=True, slots=True)
class _Call:
    """What stays the same over the attempts of one request."""

    method: str
    url: str
    log_path: str
    params: Mapping[str, str] | None
    data: bytes | None
    idempotency_key: str | None
    timeout: tuple[float, float]
    deadline: float | None

    @property
    def safe(self) -> bool:
        """Sending it twice does the work once: a GET, or a request with an idempotency key."""
        return self.method == "GET" or self.idempotency_key is not None


@dataclass(slots=True)
class _Attempt:
    """What one attempt got: a 2xx ``response``, or an ``error`` and whether to retry it."""

    status: int | str
    started: float
    request_id: str | None = None
    response: requests.Response | None = None
    error: NetworkError | APIError | None = None
    retryable: bool = False
    retry_after: float | None = None


class Transport:
    """Sends one logical request, with retries, and returns the parsed 2xx body."""

    __slots__ = (
        "_auth",
        "_auth_headers",
        "_redact",
        "backoff",
        "base_url",
        "max_retries",
        "max_retry_after",
        "observer",
        "session",
        "sleep",
        "throttle",
        "timeout",
    )

    def __init__(
        self,
        options: ClientOptions,
        *,
        session: requests.Session,
        sleep: Callable[[float], object],
        random: Callable[[], float],
        throttle: Throttle,
        observer: Observer | None = None,
    ) -> None:
        self.base_url = options.base_url
        self.observer = observer
        self.throttle = throttle
        self.timeout = options.timeout
        self.max_retries = options.max_retries
        self.session = session
        self.backoff = Backoff(options.backoff_base, options.backoff_max, random=random)
        self.max_retry_after = options.max_retry_after
        self.sleep = sleep
        secret, jwt = options.secret, options.jwt
        self._auth = _BearerAuth(f"{secret}.{jwt}")
        self._auth_headers = {
            "Accept": "application/json",
            "User-Agent": options.user_agent or f"django-paycharge/{__version__}",
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
        errors and on ``retries.RETRY_STATUSES``; any other request only when the
        gateway certainly did not process it (429, connect time-out).

        ``deadline`` (a :func:`time.monotonic` value) bounds the whole call:
        each attempt's read time-out is at most the time left, and no retry
        starts, nor retry delay is slept, past it. The call can then overrun
        the deadline by one connect time-out at most.
        """
        call = _Call(
            method=method,
            url=self.base_url + path,
            log_path=log_path(path, params),
            params=params,
            data=_json_bytes(body),
            idempotency_key=idempotency_key,
            timeout=_call_timeout(self.timeout, read_timeout),
            deadline=deadline,
        )
        if self.observer is None:
            return self._attempts(call, parse, None)
        observed = GatewayCall(method, route_of(path))
        with self.observer(observed) as report:
            return self._attempts(call, parse, lambda *a: report(_record(observed, *a)))

    def _attempts(
        self,
        call: _Call,
        parse: Callable[[Any], T],
        report: Callable[[_Attempt, int, bool], None] | None,
    ) -> T:
        paused = False
        reached = False  # whether an earlier attempt may have reached the gateway
        for attempt in range(self.max_retries + 1):
            sent = self._send(call, attempt, paused=paused)
            if reached and isinstance(sent.error, NotSentError):
                # This attempt never left, but an earlier one may have been processed.
                sent.error = _maybe_sent(sent.error)
            reached = reached or not isinstance(sent.error, NotSentError)
            if sent.response is not None:
                _log(logging.DEBUG, call, sent, attempt)
                if report is not None:
                    report(sent, attempt, False)
                return read_body(sent.response, parse, sent.request_id, self._clean)
            # After a 429 this request sleeps through the pause it asked for itself.
            paused = sent.status == 429
            will_retry = retry_decision(
                retryable=sent.retryable,
                retry_after=sent.retry_after,
                attempt=attempt,
                max_retries=self.max_retries,
                max_retry_after=self.max_retry_after,
                deadline=call.deadline,
                now=time.monotonic(),
            )
            _log(failure_level(sent.status, will_retry), call, sent, attempt)
            if report is not None:
                report(sent, attempt, will_retry)
            assert sent.error is not None
            if not will_retry:
                raise sent.error
            self._wait(sent, attempt, call.deadline)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, call: _Call, attempt: int, *, paused: bool) -> _Attempt:
        """One attempt: wait for the client's limit, send, and classify what came back."""
        timeout = _attempt_timeout(call.timeout, call.deadline)
        # Every request of this client, whichever thread sends it, shares one limit.
        self.throttle.acquire(self.sleep, paused=paused)
        started = time.perf_counter()
        try:
            response = self.session.request(
                call.method,
                call.url,
                params=call.params,
                data=call.data,
                # Never a local of this frame: tracebacks shown with their locals
                # (Django's DEBUG page, HTML error e-mails) would print the credentials.
                headers=self._headers(call.data is not None, call.idempotency_key),
                # An explicit auth also stops requests from replacing our header
                # with credentials it finds in ~/.netrc for the gateway's host.
                auth=self._auth,
                timeout=timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            self.throttle.release()
            return self._network_failure(exc, call, started)
        except BaseException:
            self.throttle.release()
            raise
        return self._answer(response, call, started, attempt)

    def _network_failure(
        self, exc: requests.RequestException, call: _Call, started: float
    ) -> _Attempt:
        error = network_error(exc, call.method)
        error.__cause__ = without_tracebacks(exc)
        return _Attempt(
            status=type(exc).__name__,
            started=started,
            error=error,
            retryable=retryable_failure(exc, safe=call.safe),
        )

    def _answer(
        self, response: requests.Response, call: _Call, started: float, attempt: int
    ) -> _Attempt:
        status = response.status_code
        request_id = response.headers.get("X-Request-Id") or response.headers.get("Request-Id")
        if 200 <= status < 300:
            self.throttle.release()
            return _Attempt(status, started, request_id, response=response)
        error = api_error(response, request_id, self._clean)
        retryable = retryable_answer(
            status, error, safe=call.safe, keyed=bool(call.idempotency_key)
        )
        retry_after = None
        if retryable:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if retry_after is None and status == 429:
            retry_after = self.backoff.delay(attempt)
        # A 429 slows every request of the client down, not only this one.
        self.throttle.release(limited=status == 429, pause=retry_after or 0.0)
        return _Attempt(status, started, request_id, None, error, retryable, retry_after)

    def _wait(self, sent: _Attempt, attempt: int, deadline: float | None) -> None:
        """Sleep ``Retry-After`` or the backoff; give up if that ends past ``deadline``."""
        delay = sent.retry_after if sent.retry_after is not None else self.backoff.delay(attempt)
        if deadline is not None and time.monotonic() + delay >= deadline:
            assert sent.error is not None
            raise sent.error
        self.sleep(delay)

    def _headers(self, json_body: bool, idempotency_key: str | None) -> dict[str, str]:
        headers = dict(self._auth_headers)
        if json_body:
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    def _clean(self, text: str) -> str:
        for secret in self._redact:
            text = text.replace(secret, "[redacted]")
        return text


def _log(level: int, call: _Call, sent: _Attempt, attempt: int) -> None:
    log_attempt(
        level, call.method, call.log_path, sent.status, sent.started, attempt, sent.request_id
    )


def _record(call: GatewayCall, sent: _Attempt, attempt: int, retrying: bool) -> GatewayAttempt:
    code = sent.error.code if isinstance(sent.error, APIError) else None
    return GatewayAttempt(
        call=call,
        status=sent.status,
        seconds=time.perf_counter() - sent.started,
        attempt=attempt + 1,
        request_id=sent.request_id,
        code=safe_code(code),
        retrying=retrying,
        owner_problem=sent.error.owner_problem if sent.error is not None else None,
    )


def _maybe_sent(error: NotSentError) -> NetworkError:
    """A failure that never left, after an attempt that may have been processed: unknown."""
    unknown = NetworkError(
        gettext_noop(
            "The payment service could not be reached, after an earlier attempt that it may "
            "have processed: retry with the same idempotency key, or read the resource first."
        )
    )
    unknown.__cause__ = error.__cause__
    return unknown


def _json_bytes(body: Mapping[str, Any] | None) -> bytes | None:
    if body is None:
        return None
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


def _call_timeout(timeout: tuple[float, float], read_timeout: float | None) -> tuple[float, float]:
    """The client's time-outs, the read one raised (never lowered) to ``read_timeout``."""
    if read_timeout is None:
        return timeout
    return (timeout[0], max(timeout[1], read_timeout))


def _attempt_timeout(timeout: tuple[float, float], deadline: float | None) -> tuple[float, float]:
    """One attempt's time-outs: the read time-out is at most the time left before ``deadline``."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    return (timeout[0], max(min(timeout[1], left), _MIN_READ_TIMEOUT))


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
