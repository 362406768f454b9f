"""Which failed attempts are tried again, and when the gateway asks for a wait.

Pure functions of what came back, so that the rules can be read and tested
apart from the sending (:mod:`~django_paycharge.client.transport`). How long
to wait otherwise is the one back-off, :mod:`~django_paycharge.client.backoff`.
"""

from __future__ import annotations

import email.utils
import ssl
from datetime import UTC, datetime

import requests
import urllib3.exceptions

from django_paycharge.exceptions import APIError

from .vocabulary import IDEMPOTENCY_KEY_IN_PROGRESS

#: Statuses worth another attempt: the gateway did not (or may not) have done the work.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: The only 409 that is retried: the same key's first request is still running.
IN_PROGRESS_CODE = IDEMPOTENCY_KEY_IN_PROGRESS


def retryable_answer(status: int, error: APIError, *, safe: bool, keyed: bool) -> bool:
    """Whether an error answer may be sent again.

    ``safe``: a GET, or a request with an idempotency key (sending it twice
    does the work once). A 429 is always retryable: the gateway refused to
    look at the request. A 409 "key in progress" is, when the request has a
    key: the first request with that key is still running.
    """
    if status == 429:
        return True
    if status == 409 and error.code == IN_PROGRESS_CODE and keyed:
        return True
    return safe and status in RETRY_STATUSES and not error.permanent


#: TLS alerts and errors that only a handshake raises: no byte of the request was sent yet.
_HANDSHAKE_REASONS = frozenset(
    {
        "CERTIFICATE_VERIFY_FAILED",
        "NO_PROTOCOLS_AVAILABLE",
        "SSLV3_ALERT_HANDSHAKE_FAILURE",
        "TLSV1_ALERT_ACCESS_DENIED",
        "TLSV1_ALERT_PROTOCOL_VERSION",
        "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_UNRECOGNIZED_NAME",
        "UNSUPPORTED_PROTOCOL",
        "WRONG_VERSION_NUMBER",
    }
)


def never_sent(exc: requests.RequestException) -> bool:
    """Whether a failure provably happened before any byte of the request was sent.

    A connect time-out, a refused connection or a name that did not resolve
    (urllib3's ``NewConnectionError``, ``NameResolutionError``), a TLS handshake
    that failed. ``requests.ConnectionError`` also wraps failures after sending (a
    connection reset while the answer was awaited): those are not counted, nor is
    an SSL error that may come from reading the answer.
    """
    if isinstance(exc, requests.ConnectTimeout):
        return True
    if not isinstance(exc, requests.ConnectionError):
        return False
    reason = exc.args[0] if exc.args else None
    if isinstance(reason, urllib3.exceptions.MaxRetryError):
        reason = reason.reason
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return True  # NameResolutionError is one too
    if isinstance(exc, requests.exceptions.SSLError):
        if isinstance(reason, urllib3.exceptions.SSLError) and reason.args:
            reason = reason.args[0]
        if isinstance(reason, ssl.SSLCertVerificationError):
            return True
        # OpenSSL's reason, when it gave one (an SSLError made by hand may have none).
        return getattr(reason, "reason", None) in _HANDSHAKE_REASONS
    return False


def retryable_failure(exc: requests.RequestException, *, safe: bool) -> bool:
    """Whether a request that got no answer may be sent again.

    One that was never sent (:func:`never_sent`) never reached the gateway;
    other network failures may have, so only a ``safe`` request is sent again
    after them.
    """
    if never_sent(exc):
        return True
    transient = (
        requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError
    )
    return safe and isinstance(exc, transient)


def retry_decision(
    *,
    retryable: bool,
    retry_after: float | None,
    attempt: int,
    max_retries: int,
    max_retry_after: float,
    deadline: float | None,
    now: float,
) -> bool:
    """Whether the failed attempt number ``attempt`` (0 for the first) is followed by another.

    ``retry_after``: the delay the gateway asked for, if any. ``deadline`` and
    ``now``: :func:`time.monotonic` values; no retry starts past the deadline.
    """
    if not retryable or attempt >= max_retries:
        return False
    if retry_after is not None and retry_after > max_retry_after:
        # Sleeping that long would stall a web request: give up now.
        return False
    if deadline is not None:
        return now + (retry_after or 0.0) < deadline
    return True


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
