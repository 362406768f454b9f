"""Spans recorded in memory, for the tests that look at them (one global provider a process)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()


def record_spans() -> InMemorySpanExporter:
    """Install the recording provider (the first call in a process) and clear what it holds."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    return EXPORTER


def describe(span: ReadableSpan) -> str:
    """Everything a span exports, as text: name, attributes, events, status."""
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return f"{span.name} {dict(span.attributes or {})} {events} {span.status.description}"
