"""The client object: credentials, options and one pooled session."""

from __future__ import annotations

import math
import os
import random as _random
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import requests
import requests.utils
from requests.adapters import HTTPAdapter

from django_paycharge import __version__
from django_paycharge.exceptions import FieldError, InvalidParametersError

from ._throttle import Throttle
from ._transport import Transport
from .lifecycle import Cancels, Refunds
from .resources import Charges, IssuerTokens, Tokens, Webhooks

DEFAULT_TIMEOUT = (5.0, 30.0)


class PayChargeClient:
    """HTTP client of the payment charge service.

    ``base_url`` is the gateway's address (``https://api.univapay.com``);
    ``secret`` and ``jwt`` are the app token's two parts, sent on every
    request as ``Authorization: Bearer <secret>.<jwt>``. Because the secret is
    always sent, operations that need it (``three_ds_mode="skip"``) work.

    ``timeout`` is seconds, or a ``(connect, read)`` pair. ``max_retries`` is
    the number of retries after the first attempt. The retry delay is
    ``random() * min(backoff_max, backoff_base * 2**n)`` for the n-th retry
    (full jitter), or the gateway's ``Retry-After`` when it sends one; a
    ``Retry-After`` beyond ``max_retry_after`` seconds ends the retries at
    once. ``sleep`` and ``random`` can be replaced to make retries
    deterministic in tests. ``polling_timeout`` is the read time-out of
    ``charges.retrieve(..., polling=True)``. ``pool_size`` is the number of
    kept-alive connections per host of the session this client creates, and
    the most requests the client sends at once (from any number of threads;
    a 429 lowers that for a while and pauses them all, see ``_throttle``); a
    given ``session`` is used as it is and not closed by :meth:`close`.

    Use it as a context manager, or call :meth:`close`, to release the
    connections. Thread-safe as far as ``requests.Session`` is.
    """

    def __init__(
        self,
        *,
        base_url: str,
        secret: str,
        jwt: str,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
        max_retries: int = 3,
        session: requests.Session | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_retry_after: float = 30.0,
        polling_timeout: float = 60.0,
        pool_size: int = 20,
        user_agent: str | None = None,
        sleep: Callable[[float], object] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        errors: list[FieldError] = []
        if not _is_http_url(base_url):
            errors.append(FieldError("base_url", "must be an absolute http or https URL"))
        for name, value in (("secret", secret), ("jwt", jwt)):
            # Checked here because requests would put a bad header value, the
            # credentials included, into its own exception message.
            if not isinstance(value, str) or not value or not _header_safe(value):
                errors.append(FieldError(name, "must be a non-empty string without spaces"))
        pair = _timeout_pair(timeout)
        if pair is None:
            errors.append(FieldError("timeout", "must be seconds or a (connect, read) pair"))
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            errors.append(FieldError("max_retries", "must be an integer >= 0"))
        for name, number in (
            ("backoff_base", backoff_base),
            ("backoff_max", backoff_max),
            ("max_retry_after", max_retry_after),
            ("polling_timeout", polling_timeout),
        ):
            if not _non_negative(number):
                errors.append(FieldError(name, "must be a number >= 0"))
        if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 1:
            errors.append(FieldError("pool_size", "must be an integer >= 1"))
        if errors:
            raise InvalidParametersError("The client is configured wrongly.", errors=errors)
        assert pair is not None

        self._owns_session = session is None
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
            session.mount("https://", adapter)
            session.mount("http://", adapter)
            _read_environment_once(session, base_url)
        self.base_url = base_url.rstrip("/")
        self.session = session
        self._transport = Transport(
            base_url=self.base_url,
            secret=secret,
            jwt=jwt,
            timeout=pair,
            max_retries=max_retries,
            session=session,
            backoff_base=float(backoff_base),
            backoff_max=float(backoff_max),
            max_retry_after=float(max_retry_after),
            user_agent=user_agent or f"django-paycharge/{__version__}",
            sleep=sleep,
            random=random,
            throttle=Throttle(pool_size),
        )
        self.charges = Charges(self._transport, float(polling_timeout))
        self.issuer_tokens = IssuerTokens(self._transport)
        self.webhooks = Webhooks(self._transport)
        self.tokens = Tokens(self._transport)
        self.refunds = Refunds(self._transport, float(polling_timeout))
        self.cancels = Cancels(self._transport, float(polling_timeout))

    def __repr__(self) -> str:
        return f"PayChargeClient(base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the pooled connections of the session this client created."""
        if self._owns_session:
            self.session.close()

    def __enter__(self) -> PayChargeClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _is_http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.query


def _header_safe(value: str) -> bool:
    return value.isascii() and value.isprintable() and " " not in value


def _non_negative(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _timeout_pair(value: Any) -> tuple[float, float] | None:
    def positive(v: Any) -> bool:
        return _non_negative(v) and v > 0

    if positive(value):
        return (float(value), float(value))
    if isinstance(value, tuple | list) and len(value) == 2 and all(positive(v) for v in value):
        return (float(value[0]), float(value[1]))
    return None


def _read_environment_once(session: requests.Session, base_url: str) -> None:
    """Take proxies and the CA bundle from the environment now, not on every request.

    With ``trust_env`` on, requests scans the environment and ``~/.netrc`` on
    every call: about a third of a small GET's cost.
    """
    session.proxies.update(requests.utils.get_environ_proxies(base_url))
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    session.trust_env = False
