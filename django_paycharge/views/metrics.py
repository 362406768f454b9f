"""The Prometheus endpoint: the app's counters, and what the database says at scrape time.

Not mounted by ``django_paycharge.urls``: the shop mounts it where it wants
and protects it as it protects the rest of its operations pages
(``docs/monitoring.md`` shows a bearer token and staff-only versions). Needs
``prometheus_client`` (the ``prometheus`` extra) and ``"prometheus"`` in
``PAYCHARGE["TELEMETRY"]`` for the counters; the numbers read at scrape time
(attention items, sync lag) are there either way.

Under a multi-process server (gunicorn with several workers) set
``PROMETHEUS_MULTIPROC_DIR`` as prometheus_client documents: the view then
adds up every worker's counters.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from ..models import SyncCheckpoint
from ..services.attention import needs_attention


class DatabaseCollector:
    """Gauges read from the mirror at each scrape (a constant number of small queries)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        now = timezone.now()
        attention = GaugeMetricFamily(
            "paycharge_attention",
            "Things that need someone's attention, as the staff dashboard counts them.",
            labels=["item"],
        )
        amounts = GaugeMetricFamily(
            "paycharge_attention_amount",
            "Money the rows of an attention item may have moved (requests whose outcome is "
            "unknown), in the currency's minor units.",
            labels=["item", "currency"],
        )
        for item in needs_attention(now):
            attention.add_metric([item.key], item.count)
            for currency, amount in item.amounts.items():
                amounts.add_metric([item.key, currency or "unknown"], amount)
        yield attention
        yield amounts
        lag = GaugeMetricFamily(
            "paycharge_sync_lag_seconds",
            "Seconds since the last completed sync of each account, store and resource.",
            labels=["account", "store", "resource"],
        )
        running = GaugeMetricFamily(
            "paycharge_sync_running_seconds",
            "Seconds since the sync in progress started (0 when none runs).",
            labels=["account", "store", "resource"],
        )
        rows = SyncCheckpoint.objects.values_list(
            "account", "store_key", "resource", "last_completed_at", "run_started_at"
        )
        for account, store, resource, completed, started in rows:
            labels = [account, store or "*", resource]
            if completed is not None:
                lag.add_metric(labels, (now - completed).total_seconds())
            running.add_metric(labels, (now - started).total_seconds() if started else 0.0)
        yield lag
        yield running


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's text format: the app's metrics (and the registry's others), then the gauges."""
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    # The app's families are declared in every process that serves them, before its first
    # gateway call or delivery: an alert on a family reads 0 where it would read "absent".
    from ..observe import prometheus as _declared  # noqa: F401

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        counters = generate_latest(registry)
    else:
        counters = generate_latest(REGISTRY)
    database = CollectorRegistry()
    database.register(DatabaseCollector())
    return HttpResponse(counters + generate_latest(database), content_type=CONTENT_TYPE_LATEST)
