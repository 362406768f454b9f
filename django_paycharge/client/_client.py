"""The client object: credentials, options and one pooled session."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import TracebackType

import requests
import requests.utils
from requests.adapters import HTTPAdapter

from .backoff import system_random
from .observe import Observer
from .options import DEFAULT_TIMEOUT, ClientOptions
from .resources import Cancels, Charges, IssuerTokens, Refunds, Subscriptions, Tokens, Webhooks
from .throttle import Throttle
from .transport import Transport


class PayChargeClient:
    """HTTP client of the payment charge service.

    ``base_url`` is the gateway's address (``https://api.univapay.com``);
    ``secret`` and ``jwt`` are the app token's two parts, sent on every
    request as ``Authorization: Bearer <secret>.<jwt>``. Because the secret is
    always sent, operations that need it (``three_ds_mode="skip"``) work.

    ``timeout`` is seconds, or a ``(connect, read)`` pair. ``max_retries`` is
    the number of retries after the first attempt. The retry delay is
    ``random() * min(backoff_max, backoff_base * 2**n)`` for the n-th retry
    (the full-jitter :class:`~.backoff.Backoff`), or the gateway's
    ``Retry-After`` when it sends one; a ``Retry-After`` beyond
    ``max_retry_after`` seconds ends the retries at once. ``sleep`` and
    ``random`` can be replaced to make retries deterministic in tests.
    ``observer`` is told about every call and its attempts (see
    :mod:`.observe`): metrics and traces connect there.
    ``polling_timeout`` is the read time-out of
    ``charges.retrieve(..., polling=True)``. ``pool_size`` is the number of
    kept-alive connections per host of the session this client creates, and
    the most requests the client sends at once (from any number of threads;
    a 429 lowers that for a while and pauses them all, see :mod:`.throttle`); a
    given ``session`` is used as it is and not closed by :meth:`close`.
    ``user_agent`` replaces ``django-paycharge/<version>``.

    The options are checked as one :class:`~.options.ClientOptions`; a
    client can also be built from one (:meth:`from_options`), as the app
    builds each account's.

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
        random: Callable[[], float] = system_random,
        observer: Observer | None = None,
    ) -> None:
        options = ClientOptions.checked(
            base_url=base_url,
            secret=secret,
            jwt=jwt,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_retry_after=max_retry_after,
            polling_timeout=polling_timeout,
            pool_size=pool_size,
            user_agent=user_agent,
        )
        self._owns_session = session is None
        self.base_url = options.base_url
        self.session = (
            session if session is not None else _pooled_session(self.base_url, options.pool_size)
        )
        self._transport = Transport(
            options,
            session=self.session,
            sleep=sleep,
            random=random,
            throttle=Throttle(options.pool_size),
            observer=observer,
        )
        self._attach_resources(options.polling_timeout)

    def _attach_resources(self, polling_timeout: float) -> None:
        """The resource services (``client.charges``...), each over the one transport."""
        self.charges = Charges(self._transport, polling_timeout)
        self.issuer_tokens = IssuerTokens(self._transport)
        self.webhooks = Webhooks(self._transport)
        self.tokens = Tokens(self._transport)
        self.refunds = Refunds(self._transport, polling_timeout)
        self.cancels = Cancels(self._transport, polling_timeout)
        self.subscriptions = Subscriptions(self._transport, polling_timeout)

    @classmethod
    def from_options(
        cls,
        options: ClientOptions,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], object] = time.sleep,
        random: Callable[[], float] = system_random,
        observer: Observer | None = None,
    ) -> PayChargeClient:
        """A client of checked ``options`` (a :class:`~django_paycharge.conf.Account` is one)."""
        return cls(
            **options.values(), session=session, sleep=sleep, random=random, observer=observer
        )

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


def _pooled_session(base_url: str, pool_size: int) -> requests.Session:
    session = requests.Session()
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    _read_environment_once(session, base_url)
    return session


def _read_environment_once(session: requests.Session, base_url: str) -> None:
    """Take proxies and the CA bundle from the environment now, not on every request.

    With ``trust_env`` on, requests scans the environment and ``~/.netrc`` on
    every call, the largest part of a small GET's cost (``docs/benchmarks.md``,
    "Why requests is slow here").
    """
    session.proxies.update(requests.utils.get_environ_proxies(base_url))
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    session.trust_env = False
