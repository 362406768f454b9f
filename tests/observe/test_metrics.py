"""Metric values after scripted flows: a refund, a failing gateway, a slow one, webhooks, a sync."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY

from django_paycharge import services
from django_paycharge.exceptions import AuthenticationError, NotFoundError, PayChargeError
from django_paycharge.models import Charge, WebhookDelivery
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery
from django_paycharge.views.metrics import metrics

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_owner_problems")]

CHARGE_ROUTE = "/stores/{id}/charges/{id}"


def test_a_refund_counts_its_calls_by_route_and_status(telemetry, fake_gateway):
    charge = services.create_charge(
        transaction_token_id=fake_gateway.create_transaction_token("card")["id"],
        amount=2000,
        currency="JPY",
    )
    route = "/stores/{id}/charges/{id}/refunds"
    before = telemetry(
        "paycharge_gateway_requests_total",
        account="default",
        method="POST",
        route=route,
        status="201",
    )
    timed = telemetry(
        "paycharge_gateway_request_duration_seconds_count",
        account="default",
        method="POST",
        route=route,
    )
    services.refund_charge(Charge.objects.get(pk=charge.pk), amount=500)
    assert (
        telemetry(
            "paycharge_gateway_requests_total",
            account="default",
            method="POST",
            route=route,
            status="201",
        )
        == before + 1
    )
    assert (
        telemetry(
            "paycharge_gateway_request_duration_seconds_count",
            account="default",
            method="POST",
            route=route,
        )
        == timed + 1
    )


def test_a_failing_gateway_counts_errors_by_status_and_code_and_the_retries(
    telemetry, fake_gateway
):
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])
    labels = {"account": "default", "method": "GET", "route": CHARGE_ROUTE}
    errors = telemetry("paycharge_gateway_errors_total", status="503", **labels)
    retries = telemetry("paycharge_gateway_retries_total", **labels)
    fake_gateway.add_fault("GET", r"/charges/", action="status", status=503, count=2)
    services.refresh_charge(created["id"])
    assert telemetry("paycharge_gateway_errors_total", status="503", **labels) == errors + 2
    assert telemetry("paycharge_gateway_retries_total", **labels) == retries + 2
    # A refusal with the gateway's code: labelled by it.
    refused = {"status": "404", "code": "NOT_FOUND", **labels}
    not_found = telemetry("paycharge_gateway_errors_total", **refused)
    with pytest.raises(NotFoundError):
        services.refresh_charge(str(uuid.uuid4()))
    assert telemetry("paycharge_gateway_errors_total", **refused) == not_found + 1


def test_a_code_the_vocabulary_does_not_know_is_labelled_other(telemetry, fake_gateway):
    """40 new codes from the gateway would make 40 new series: only known codes are labels."""
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])
    labels = {"account": "default", "method": "GET", "route": CHARGE_ROUTE, "status": "400"}
    other = telemetry("paycharge_gateway_errors_total", code="other", **labels)
    for n in range(3):
        body = {"status": "error", "code": f"BRAND_NEW_CODE_{n}", "errors": []}
        fake_gateway.add_fault("GET", r"/charges/", action="status", status=400, body=body, count=1)
        with pytest.raises(PayChargeError):
            services.refresh_charge(created["id"])
    assert telemetry("paycharge_gateway_errors_total", code="other", **labels) == other + 3
    codes = {
        s.labels["code"]
        for metric in REGISTRY.collect()
        for s in metric.samples
        if s.name == "paycharge_gateway_errors_total"
    }
    assert not {c for c in codes if c.startswith("BRAND_NEW_CODE")}


def test_a_slow_gateway_moves_the_latency_histogram(telemetry, fake_gateway):
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])
    labels = {"account": "default", "method": "GET", "route": CHARGE_ROUTE}
    fast = telemetry("paycharge_gateway_request_duration_seconds_bucket", le="0.25", **labels)
    total = telemetry("paycharge_gateway_request_duration_seconds_count", **labels)
    fake_gateway.latency = 0.3
    services.refresh_charge(created["id"])
    # At least 0.3 s: counted, and above the 0.25 s bucket (a lower bound only: load adds time).
    assert telemetry("paycharge_gateway_request_duration_seconds_count", **labels) == total + 1
    assert (
        telemetry("paycharge_gateway_request_duration_seconds_bucket", le="0.25", **labels) == fast
    )


def _delivery(fake_gateway, charge_id: str, delivery_id: str) -> bytes:
    body = {"id": delivery_id, "event": "charge_finished", "data": fake_gateway.charges[charge_id]}
    return json.dumps(body).encode()


def test_webhook_deliveries_received_processed_failed_and_taken_over(telemetry, fake_gateway):
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])

    def count(name, **labels):
        return telemetry(name, account="default", **labels)

    stored = count(
        "paycharge_webhook_deliveries_received_total", event="charge_finished", outcome="stored"
    )
    repeats = count(
        "paycharge_webhook_deliveries_received_total", event="charge_finished", outcome="repeat"
    )
    processed = count(
        "paycharge_webhook_deliveries_processed_total", event="charge_finished", status="processed"
    )
    failed = count(
        "paycharge_webhook_deliveries_processed_total", event="charge_finished", status="failed"
    )
    lag = count("paycharge_webhook_delivery_lag_seconds_count")
    takeovers = count("paycharge_webhook_lease_takeovers_total")
    hook = Client()
    token = "whk-metrics-token"
    from django.conf import settings

    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [token]}
    for _ in range(2):  # the second is a repeat
        answer = hook.post(
            "/payments/webhook/",
            _delivery(fake_gateway, created["id"], "m-1"),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert answer.status_code == 200
    assert (
        count(
            "paycharge_webhook_deliveries_received_total", event="charge_finished", outcome="stored"
        )
        == stored + 1
    )
    assert (
        count(
            "paycharge_webhook_deliveries_received_total", event="charge_finished", outcome="repeat"
        )
        == repeats + 1
    )
    assert (
        count(
            "paycharge_webhook_deliveries_processed_total",
            event="charge_finished",
            status="processed",
        )
        == processed + 1
    )
    # A failed one: its charge is unknown to the gateway.
    body = json.dumps(
        {"id": "m-2", "event": "charge_finished", "data": {"id": str(uuid.uuid4())}}
    ).encode()
    delivery, _ = store_delivery(body=body, headers={}, account="default")
    assert process_delivery(delivery.pk) == "failed"
    assert (
        count(
            "paycharge_webhook_deliveries_processed_total", event="charge_finished", status="failed"
        )
        == failed + 1
    )
    assert count("paycharge_webhook_delivery_lag_seconds_count") == lag + 2
    # A dead worker's claim, taken over by the next run.
    stuck, _ = store_delivery(
        body=_delivery(fake_gateway, created["id"], "m-3"), headers={}, account="default"
    )
    WebhookDelivery.objects.filter(pk=stuck.pk).update(
        status="processing", attempts=1, lease_until=timezone.now() - timedelta(seconds=1)
    )
    assert process_delivery(stuck.pk) == "processed"
    assert count("paycharge_webhook_lease_takeovers_total") == takeovers + 1
    # A plain claim of a waiting one is no takeover.
    waiting, _ = store_delivery(
        body=_delivery(fake_gateway, created["id"], "m-4"), headers={}, account="default"
    )
    assert process_delivery(waiting.pk) == "processed"
    assert count("paycharge_webhook_lease_takeovers_total") == takeovers + 1


def test_a_sync_run_counts_rows_duration_and_outcome(telemetry, fake_gateway):
    fake_gateway.seed(130)
    labels = {"account": "default", "resource": "charges"}
    runs = telemetry("paycharge_sync_runs_total", outcome="complete", **labels)
    rows = telemetry("paycharge_sync_rows_total", **labels)
    timed = telemetry("paycharge_sync_run_duration_seconds_count", **labels)
    services.sync_charges()
    assert telemetry("paycharge_sync_runs_total", outcome="complete", **labels) == runs + 1
    assert telemetry("paycharge_sync_rows_total", **labels) == rows + 130
    assert telemetry("paycharge_sync_run_duration_seconds_count", **labels) == timed + 1
    failed = telemetry("paycharge_sync_runs_total", outcome="failed", **labels)
    fake_gateway.add_fault("GET", r"/charges", action="status", status=401)
    with pytest.raises(Exception, match="401"):
        services.sync_charges()
    assert telemetry("paycharge_sync_runs_total", outcome="failed", **labels) == failed + 1


def test_the_endpoint_shows_counters_and_what_the_database_says(telemetry, fake_gateway, rf):
    fake_gateway.seed(3)
    services.sync_charges()
    WebhookDelivery.objects.create(
        dedupe_key="x", body="{}", received_at=timezone.now(), status="failed"
    )
    response = metrics(rf.get("/metrics"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'paycharge_attention{item="deliveries_failed"} 1.0' in text
    assert 'paycharge_attention{item="charge_requests_unknown"} 0.0' in text
    assert 'paycharge_sync_lag_seconds{account="default",resource="charges",store="*"}' in text
    assert "paycharge_gateway_requests_total{" in text
    assert metrics(rf.post("/metrics")).status_code == 405


def test_a_refused_secret_is_counted_as_the_owners_and_shown_as_needing_attention(
    telemetry, fake_gateway, settings, rf
):
    token = fake_gateway.create_transaction_token("card")["id"]
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "not-the-secret"}
    before = telemetry("paycharge_owner_problems_total", kind="credentials")
    with pytest.raises(AuthenticationError) as info:
        services.create_charge(transaction_token_id=token, amount=100, currency="JPY")
    assert info.value.outcome == "not_sent"
    assert telemetry("paycharge_owner_problems_total", kind="credentials") == before + 1
    exposed = metrics(rf.get("/metrics")).content.decode()
    assert 'paycharge_attention{item="owner_problems"} 1.0' in exposed
    assert "not-the-secret" not in exposed
