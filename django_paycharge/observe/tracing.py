"""OpenTelemetry spans (``PAYCHARGE["TELEMETRY"]`` has ``"opentelemetry"``).

Imported only then: ``opentelemetry-api`` is the ``opentelemetry`` extra. The
app only uses the API; the shop configures the SDK and its exporter as it
does for the rest of its code (until then, the API's spans record nothing).
Attributes hold routes, statuses, gateway codes and request ids, and the
app's own ids: never a body, a header or a query string.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import __version__
from ..client.observe import GatewayAttempt, GatewayCall

_tracer = trace.get_tracer("django_paycharge", __version__)


@contextmanager
def span(name: str, attributes: Mapping[str, Any]) -> Iterator[Span]:
    """A span around the work inside; an exception escaping it marks it as an error."""
    with _tracer.start_as_current_span(name, attributes=dict(attributes)) as current:
        yield current


@contextmanager
def gateway_span(account: str, call: GatewayCall) -> Iterator[Span]:
    attributes = {
        "http.request.method": call.method,
        "url.template": call.route,
        "paycharge.account": account,
    }
    name = f"paycharge.gateway {call.method} {call.route}"
    with _tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as s:
        yield s


def record_attempt(current: Span, attempt: GatewayAttempt) -> None:
    """The span of a call holds its last attempt's answer and the number of attempts."""
    current.set_attribute("paycharge.attempts", attempt.attempt)
    if isinstance(attempt.status, int):
        current.set_attribute("http.response.status_code", attempt.status)
    if attempt.request_id:
        current.set_attribute("paycharge.request_id", attempt.request_id)
    if attempt.failed:
        current.set_attribute("error.type", attempt.code or str(attempt.status))
        if not attempt.retrying:
            current.set_status(Status(StatusCode.ERROR))
