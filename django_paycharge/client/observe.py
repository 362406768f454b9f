"""What a client tells an observer about its calls: plain data, no metrics library, no Django.

A client built with ``observer=`` calls it once per logical request (a
method and a route), and reports each attempt of that request to the
callable the observer's context gives back. The services connect the app's
metrics, traces and log context to it (``django_paycharge.observe``); any
other user of the client can connect their own.

Nothing reported carries a credential, a query string or an id: a route is
the path with every segment that is not a word of the gateway's vocabulary
replaced by ``{id}``, and an error code is kept only in the gateway's
``UPPER_SNAKE`` form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

__all__ = ["GatewayAttempt", "GatewayCall", "Observer", "route_of"]

_WORD = re.compile(r"[a-z][a-z_]{0,39}")
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


@dataclass(frozen=True, slots=True)
class GatewayCall:
    """One logical request: its method and its route (``/stores/{id}/charges/{id}``)."""

    method: str
    route: str


@dataclass(frozen=True, slots=True)
class GatewayAttempt:
    """One attempt of a call, once it has an answer or a failure.

    ``status`` is the HTTP status, or the network failure's exception name
    (``ConnectTimeout``); ``attempt`` counts from 1; ``retrying`` says the
    client tries again after it. ``code`` is the gateway's error code.
    """

    call: GatewayCall
    status: int | str
    seconds: float
    attempt: int
    request_id: str | None
    code: str | None
    retrying: bool
    #: What the shop's owner must fix, when the failure is theirs
    #: (:attr:`~django_paycharge.exceptions.PayChargeError.owner_problem`).
    owner_problem: str | None = None

    @property
    def failed(self) -> bool:
        return not (isinstance(self.status, int) and 200 <= self.status < 300)


#: Called with each call; its context is held while the call's attempts run and
#: gives the callable that each attempt is reported to.
Observer = Callable[[GatewayCall], AbstractContextManager[Callable[[GatewayAttempt], None]]]


def route_of(path: str) -> str:
    """``/stores/5f1c.../charges/9ab2...`` -> ``/stores/{id}/charges/{id}`` (no query string)."""
    segments = path.split("?", 1)[0].split("/")
    return "/".join(s if not s or _WORD.fullmatch(s) else "{id}" for s in segments)


def safe_code(code: str | None) -> str | None:
    """The gateway's error code if it has the documented form; None otherwise."""
    return code if code and _CODE.fullmatch(code) else None
