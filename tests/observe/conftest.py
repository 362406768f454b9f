"""Fixtures of the monitoring tests: metrics turned on, spans recorded in memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

_EXPORTER = InMemorySpanExporter()


def _install_tracer_provider() -> None:
    # A process has one global provider, set once: the first test that needs it sets it.
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)


@pytest.fixture
def telemetry(settings: Any, fake_gateway: Any) -> Iterator[Callable[..., float]]:
    """Both backends on, on the fake gateway; ``telemetry(name, **labels)`` reads samples."""
    _install_tracer_provider()
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TELEMETRY": ["prometheus", "opentelemetry"]}
    _EXPORTER.clear()

    def sample(name: str, **labels: str) -> float:
        """The sum of the samples called ``name`` whose labels include ``labels``."""
        return sum(
            s.value
            for metric in REGISTRY.collect()
            for s in metric.samples
            if s.name == name and labels.items() <= s.labels.items()
        )

    yield sample
    _EXPORTER.clear()


@pytest.fixture
def spans(telemetry: Any) -> Callable[[], list[ReadableSpan]]:
    """The spans finished so far in this test."""
    return lambda: list(_EXPORTER.get_finished_spans())
