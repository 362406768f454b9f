"""Metrics, traces and log context: the hooks the services call, one line each.

``PAYCHARGE["TELEMETRY"]`` names the backends: ``"prometheus"``
(``prometheus_client``, the ``prometheus`` extra) and ``"opentelemetry"``
(spans through ``opentelemetry-api``, the ``opentelemetry`` extra). With none
(the default) nothing is imported and each hook returns after one test.

The log context (which delivery, which charge request, the gateway's request
id of the latest answer: :mod:`.logs`) is kept whatever ``TELEMETRY`` says:
it is what joins a gateway request id to the rows and log lines it concerns.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from typing import Any, ParamSpec, Protocol, TypeVar

from .. import conf
from ..client.observe import GatewayAttempt, GatewayCall, Observer
from ..client.vocabulary import TRIGGERS
from . import _context
from ._context import request_id, scoped

__all__ = [
    "BACKENDS",
    "carry",
    "delivery_finished",
    "delivery_received",
    "gateway_observer",
    "lease_taken_over",
    "owner_problem",
    "quarantined",
    "request_id",
    "scoped",
    "sync_finished",
    "traced",
]

logger = logging.getLogger("django_paycharge.observe")

P = ParamSpec("P")
R = TypeVar("R")

#: The backends ``TELEMETRY`` may name, and the module each needs.
BACKENDS = {"prometheus": "prometheus_client", "opentelemetry": "opentelemetry.trace"}


class Recorder(Protocol):
    def gateway_attempt(self, account: str, attempt: GatewayAttempt) -> None: ...
    def delivery_received(self, account: str, event: str, stored: bool) -> None: ...
    def delivery_finished(
        self, account: str, event: str, status: str, lag: float | None
    ) -> None: ...
    def lease_taken_over(self, account: str) -> None: ...
    def sync_finished(
        self, account: str, resource: str, outcome: str, seconds: float, rows: int
    ) -> None: ...
    def quarantined(self, account: str, resource: str, count: int) -> None: ...
    def owner_problem(self, account: str, kind: str) -> None: ...


class _Backends:
    """What ``TELEMETRY`` turned on, read once (again after a settings change)."""

    __slots__ = ("recorders", "tracing")

    def __init__(self, names: Any) -> None:
        self.recorders: tuple[Recorder, ...] = ()
        self.tracing: Any = None
        # A backend that cannot load is left off (check E030 says why): metrics never
        # stop a payment.
        try:
            if "prometheus" in names:
                from .prometheus import PrometheusRecorder

                self.recorders = (PrometheusRecorder(),)
            if "opentelemetry" in names:
                from . import tracing

                self.tracing = tracing
        except ImportError as exc:
            logger.error("PAYCHARGE['TELEMETRY']: a backend could not be loaded: %s", exc)


# The backends, and the settings' generation they were loaded at (loaded again after a change).
_current: tuple[_Backends, int] | None = None


def _backends() -> _Backends:
    global _current
    generation = conf.settings_generation()
    if _current is None or _current[1] != generation:
        _current = (_Backends(conf.get_setting("TELEMETRY") or ()), generation)
    return _current[0]


# -- the gateway ------------------------------------------------------------------------------


def gateway_observer(account: str) -> Observer:
    """The observer of ``account``'s client: metrics, a span and the scope's request ids."""

    def observe(call: GatewayCall) -> _CallObservation:
        return _CallObservation(account, call)

    return observe


class _CallObservation:
    """One call's observation: a span around it (when traced), each attempt reported.

    A plain class rather than a generator context manager: with ``TELEMETRY`` empty it
    is what every gateway call pays, so it does as little as it can.
    """

    __slots__ = ("_span_context", "account", "call", "recorders", "span", "tracing")

    def __init__(self, account: str, call: GatewayCall) -> None:
        backends = _backends()
        self.account, self.call = account, call
        self.recorders, self.tracing = backends.recorders, backends.tracing
        self.span: Any = None
        self._span_context: Any = None

    def __enter__(self) -> Callable[[GatewayAttempt], None]:
        if self.tracing is not None:
            self._span_context = self.tracing.gateway_span(self.account, self.call)
            self.span = self._span_context.__enter__()
        return self.report

    def __exit__(self, *exc_info: Any) -> bool | None:
        if self._span_context is None:
            return None
        return bool(self._span_context.__exit__(*exc_info))

    def report(self, attempt: GatewayAttempt) -> None:
        _context.note_answer(self.call.method, attempt.request_id)
        for recorder in self.recorders:
            recorder.gateway_attempt(self.account, attempt)
        if self.span is not None:
            self.tracing.record_attempt(self.span, attempt)


# -- work: spans and log scopes ---------------------------------------------------------------


def traced(
    name: str, scope: Callable[..., dict[str, str]] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the function in a log scope (``scope(*args, **kwargs)`` gives its ids) and a span."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            ids = scope(*args, **kwargs) if scope is not None else {}
            tracing = _backends().tracing
            attributes = {f"paycharge.{k}": v for k, v in ids.items()}
            with scoped(**ids), tracing.span(name, attributes) if tracing else nullcontext():
                return function(*args, **kwargs)

        return wrapper

    return decorate


def carry(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` to run in another thread, in a copy of this context (span, log scope)."""
    context = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.run(function, *args, **kwargs)

    return run


# -- events -----------------------------------------------------------------------------------


def _event(event: str) -> str:
    # Only the vocabulary's triggers as labels: a body's odd value would be a new series each.
    return event if event in TRIGGERS else "other"


def delivery_received(account: str, event: str, stored: bool) -> None:
    for recorder in _backends().recorders:
        recorder.delivery_received(account, _event(event), stored)


def delivery_finished(
    account: str, event: str, status: str, received_at: datetime, finished_at: datetime | None
) -> None:
    recorders = _backends().recorders
    if not recorders:
        return
    lag = (finished_at - received_at).total_seconds() if finished_at else None
    for recorder in recorders:
        recorder.delivery_finished(account, _event(event), status, lag)


def lease_taken_over(account: str) -> None:
    for recorder in _backends().recorders:
        recorder.lease_taken_over(account)


def sync_finished(account: str, resource: str, outcome: str, seconds: float, rows: int) -> None:
    for recorder in _backends().recorders:
        recorder.sync_finished(account, resource, outcome, seconds, rows)


def quarantined(account: str, resource: str, count: int) -> None:
    if count:
        for recorder in _backends().recorders:
            recorder.quarantined(account, resource, count)


def owner_problem(account: str, kind: str) -> None:
    """A failure the shop's owner must fix (``services.problems``): ``kind`` is one of a
    fixed few (credentials, permissions, store, settings, unreachable)."""
    for recorder in _backends().recorders:
        recorder.owner_problem(account, kind)
