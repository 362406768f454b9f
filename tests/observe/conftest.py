"""Fixtures of the monitoring tests: metrics turned on, spans recorded in memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from prometheus_client import REGISTRY

from .recording import EXPORTER, record_spans


@pytest.fixture
def telemetry(settings: Any, fake_gateway: Any) -> Iterator[Callable[..., float]]:
    """Both backends on, on the fake gateway; ``telemetry(name, **labels)`` reads samples."""
    exporter = record_spans()
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TELEMETRY": ["prometheus", "opentelemetry"]}

    def sample(name: str, **labels: str) -> float:
        """The sum of the samples called ``name`` whose labels include ``labels``."""
        return sum(
            s.value
            for metric in REGISTRY.collect()
            for s in metric.samples
            if s.name == name and labels.items() <= s.labels.items()
        )

    yield sample
    exporter.clear()


@pytest.fixture
def spans(telemetry: Any) -> Callable[[], list[ReadableSpan]]:
    """The spans finished so far in this test."""
    return lambda: list(EXPORTER.get_finished_spans())
