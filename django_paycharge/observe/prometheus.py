"""Prometheus metrics of what happens (``PAYCHARGE["TELEMETRY"]`` has ``"prometheus"``).

Imported only then: ``prometheus_client`` is the ``prometheus`` extra. The
metrics are registered on prometheus_client's default registry, so a shop that
already exposes it (django-prometheus, its own view) gets them there too; the
app's own view (:mod:`django_paycharge.views.metrics`) adds the numbers read
from the database at scrape time. Labels hold only routes, statuses, the error
codes of the client's vocabulary (``other`` for the rest), triggers of the
vocabulary, and account names from the settings.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from ..client.observe import GatewayAttempt
from ..client.vocabulary import ERROR_CODES

_LATENCY = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_LAG = (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 86400.0)
_RUN = (0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)

gateway_requests = Counter(
    "paycharge_gateway_requests",
    "Attempts of requests to the payment gateway, by answer status (or network failure).",
    ["account", "method", "route", "status"],
)
gateway_latency = Histogram(
    "paycharge_gateway_request_duration_seconds",
    "Time of one attempt of a request to the payment gateway.",
    ["account", "method", "route"],
    buckets=_LATENCY,
)
gateway_errors = Counter(
    "paycharge_gateway_errors",
    "Failed attempts: error answers by status and the gateway's code, and network failures.",
    ["account", "method", "route", "status", "code"],
)
gateway_retries = Counter(
    "paycharge_gateway_retries",
    "Attempts the client made again after a failed one.",
    ["account", "method", "route"],
)
deliveries_received = Counter(
    "paycharge_webhook_deliveries_received",
    "Genuine webhook deliveries received: stored, or a repeat of one already stored.",
    ["account", "event", "outcome"],
)
deliveries_processed = Counter(
    "paycharge_webhook_deliveries_processed",
    "Webhook deliveries whose processing ended, by the status it left them in.",
    ["account", "event", "status"],
)
delivery_lag = Histogram(
    "paycharge_webhook_delivery_lag_seconds",
    "From a delivery's receipt to the end of its processing.",
    ["account"],
    buckets=_LAG,
)
lease_takeovers = Counter(
    "paycharge_webhook_lease_takeovers",
    "Deliveries taken over after their worker's lease ran out (it died or hung).",
    ["account"],
)
sync_runs = Counter(
    "paycharge_sync_runs",
    "Sync runs, by how they ended: complete, partial (a page budget) or failed.",
    ["account", "resource", "outcome"],
)
sync_rows = Counter(
    "paycharge_sync_rows",
    "Items a sync read from the gateway.",
    ["account", "resource"],
)
sync_duration = Histogram(
    "paycharge_sync_run_duration_seconds",
    "Time of one sync run.",
    ["account", "resource"],
    buckets=_RUN,
)
quarantined = Counter(
    "paycharge_quarantined_items",
    "Items the gateway sent that could not be stored, set aside (each time seen).",
    ["account", "resource"],
)

owner_problems = Counter(
    "paycharge_owner_problems",
    "Gateway calls that failed on the shop's own settings (credentials, permissions, store, "
    "a setting) or could not reach the gateway: the owner must act.",
    ["account", "kind"],
)


class PrometheusRecorder:
    """Records each event on the metrics above."""

    def gateway_attempt(self, account: str, attempt: GatewayAttempt) -> None:
        call = attempt.call
        status = str(attempt.status)
        gateway_requests.labels(account, call.method, call.route, status).inc()
        gateway_latency.labels(account, call.method, call.route).observe(attempt.seconds)
        if attempt.failed:
            code = attempt.code or ""
            if code and code not in ERROR_CODES:  # a bounded label: one series per known code
                code = "other"
            gateway_errors.labels(account, call.method, call.route, status, code).inc()
        if attempt.attempt > 1:
            gateway_retries.labels(account, call.method, call.route).inc()

    def delivery_received(self, account: str, event: str, stored: bool) -> None:
        deliveries_received.labels(account, event, "stored" if stored else "repeat").inc()

    def delivery_finished(self, account: str, event: str, status: str, lag: float | None) -> None:
        deliveries_processed.labels(account, event, status).inc()
        if lag is not None:
            delivery_lag.labels(account).observe(lag)

    def lease_taken_over(self, account: str) -> None:
        lease_takeovers.labels(account).inc()

    def sync_finished(
        self, account: str, resource: str, outcome: str, seconds: float, rows: int
    ) -> None:
        sync_runs.labels(account, resource, outcome).inc()
        sync_rows.labels(account, resource).inc(rows)
        sync_duration.labels(account, resource).observe(seconds)

    def quarantined(self, account: str, resource: str, count: int) -> None:
        quarantined.labels(account, resource).inc(count)

    def owner_problem(self, account: str, kind: str) -> None:
        owner_problems.labels(account, kind).inc()
