"""Telemetry benchmark: what metrics and traces cost a gateway call, as a ratio in one run.

    bench/run telemetry [--calls 1000] [--rounds 5] [--hook-calls 100000]

Against the fake gateway server (its own process), ``--calls`` single reads
(``client.charges.retrieve``) per contender per round, contenders taking turns
within each round:

- **no observer**: a client built without one (the floor);
- **off**: the observer the services connect, ``TELEMETRY`` empty (the
  default): it only notes the gateway's request id for the log context;
- **prometheus**: ``TELEMETRY = ["prometheus"]``;
- **prometheus + opentelemetry**: both, with the OpenTelemetry SDK configured
  (a batch span processor and an exporter that drops the spans: the SDK's
  own cost, not a collector's).

It prints the median time per call of each and its ratio to the floor (the
median of the rounds' own ratios, with their range), then the observer's own
cost per call without any HTTP (``--hook-calls`` calls of the hooks alone).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench._common import fake_server, machine, median, table

CONTENDERS = ("no observer", "off", "prometheus", "prometheus + opentelemetry")
SETTINGS = {
    "off": [],
    "prometheus": ["prometheus"],
    "prometheus + opentelemetry": ["prometheus", "opentelemetry"],
}


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    os.environ.setdefault("BENCH_DB", "sqlite")
    os.environ.setdefault("BENCH_DB_NAME", os.path.join(tempfile.gettempdir(), "unused.sqlite3"))
    import django

    django.setup()
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Drop(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)


def _use(name: str) -> None:
    from django.conf import settings
    from django.test.signals import setting_changed

    value = {**settings.PAYCHARGE, "TELEMETRY": SETTINGS.get(name, [])}
    settings.PAYCHARGE = value
    # What a settings change tells the app (override_settings sends it too).
    setting_changed.send(sender=None, setting="PAYCHARGE", value=value, enter=True)


def _clients(base_url: str) -> dict[str, Any]:
    from django_paycharge import observe
    from django_paycharge.client import PayChargeClient
    from django_paycharge.testing import TEST_JWT, TEST_SECRET

    def make(observer: Any) -> PayChargeClient:
        return PayChargeClient(
            base_url=base_url, secret=TEST_SECRET, jwt=TEST_JWT, observer=observer
        )

    clients = {name: make(observe.gateway_observer("default")) for name in CONTENDERS[1:]}
    return {"no observer": make(None), **clients}


def _time_calls(client: Any, store: str, charge: str, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        client.charges.retrieve(store, charge)
    return (time.perf_counter() - started) / calls


def _hooks_alone(name: str, calls: int) -> float:
    """Microseconds per call of the observer alone: a call, one attempt reported."""
    from django_paycharge import observe
    from django_paycharge.client.observe import GatewayAttempt, GatewayCall

    _use(name)
    observer = observe.gateway_observer("default")
    call = GatewayCall("GET", "/stores/{id}/charges/{id}")
    attempt = GatewayAttempt(call, 200, 0.001, 1, "req-1", None, False)
    started = time.perf_counter()
    for _ in range(calls):
        with observer(call) as report:
            report(attempt)
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description="Telemetry overhead benchmark.")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hook-calls", type=int, default=100_000)
    args = parser.parse_args()
    _setup()
    context = machine()
    per_call: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    with fake_server() as server:
        from django_paycharge.testing import TEST_STORE_ID

        created = _charge(server)
        clients = _clients(server.base_url)
        for name in CONTENDERS:  # warm-up: connections, imports
            _use(name)
            _time_calls(clients[name], TEST_STORE_ID, created, 20)
        for round_no in range(args.rounds):
            order = CONTENDERS if round_no % 2 == 0 else tuple(reversed(CONTENDERS))
            for name in order:
                _use(name)
                per_call[name].append(
                    _time_calls(clients[name], TEST_STORE_ID, created, args.calls)
                )
    floor = per_call["no observer"]
    rows = []
    for name in CONTENDERS:
        ratios = [t / f for t, f in zip(per_call[name], floor, strict=True)]
        rows.append(
            [
                name,
                median(per_call[name]) * 1000,
                f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}x-{max(ratios):.3f}x)",
                _hooks_alone(name, args.hook_calls) if name != "no observer" else 0.0,
            ]
        )
    print(
        table(
            f"Gateway reads with telemetry: {args.calls:,} calls a contender, "
            f"median of {args.rounds} rounds",
            ["contender", "ms per call", "vs no observer", "hooks alone µs per call"],
            rows,
        )
    )
    print(f"\n{context}")


def _charge(server: Any) -> str:
    """A charge to read: one of a few seeded ones (as ``bench/run client`` does)."""
    import requests

    from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID

    server.control("seed", {"count": 10, "seed": 1})
    listed = requests.get(
        f"{server.base_url}/stores/{TEST_STORE_ID}/charges",
        params={"limit": "10"},
        headers={"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"},
        timeout=10,
    ).json()
    return str(listed["items"][0]["id"])


if __name__ == "__main__":
    main()
