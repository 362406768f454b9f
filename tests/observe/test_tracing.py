"""OpenTelemetry spans around gateway calls, sync windows and delivery processing."""

from __future__ import annotations

import json

import pytest

from django_paycharge import services
from django_paycharge.models import WebhookDelivery
from django_paycharge.services.sync import pace as _pace
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_delivery_span_holds_its_gateway_call(spans, fake_gateway):
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])
    body = {"id": "t-1", "event": "charge_finished", "data": fake_gateway.charges[created["id"]]}
    delivery, _ = store_delivery(body=json.dumps(body).encode(), headers={}, account="default")
    assert process_delivery(delivery.pk) == "processed"
    [processing] = [s for s in spans() if s.name == "paycharge.webhook.process"]
    assert processing.attributes["paycharge.delivery"] == str(delivery.pk)
    calls = [s for s in spans() if s.parent and s.parent.span_id == processing.context.span_id]
    read = next(s for s in calls if s.name == "paycharge.gateway GET /stores/{id}/charges/{id}")
    assert read.attributes["http.response.status_code"] == 200
    assert read.attributes["url.template"] == "/stores/{id}/charges/{id}"
    stored = WebhookDelivery.objects.get(pk=delivery.pk)
    # The last answer of the processing: the row, the span and the gateway agree on it.
    last = max(calls, key=lambda s: s.end_time)
    assert stored.gateway_request_id == last.attributes["paycharge.request_id"]


def test_a_failed_call_is_an_error_span_after_its_retries(spans, fake_gateway):
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])
    fake_gateway.add_fault("GET", r"/charges/", action="status", status=500)
    with pytest.raises(Exception, match="500"):
        services.refresh_charge(created["id"])
    [call] = [s for s in spans() if s.name.startswith("paycharge.gateway GET")]
    assert call.status.status_code.name == "ERROR"
    assert call.attributes["paycharge.attempts"] == 4  # MAX_RETRIES 3
    assert call.attributes["http.response.status_code"] == 500


@pytest.mark.slow
def test_sync_windows_read_in_threads_are_children_of_the_run(spans, fake_gateway, monkeypatch):
    fake_gateway.seed(1_500)
    fake_gateway.latency = 0.05  # requests longer than a page's store: the run splits windows
    # Every window at once on SQLite too, whatever this host's pace says.
    monkeypatch.setattr(_pace.Pace, "windows", lambda pace: pace.most)
    services.sync_charges(windows=4)
    [run] = [s for s in spans() if s.name == "paycharge.sync"]
    windows = [s for s in spans() if s.name == "paycharge.sync.window"]
    assert len(windows) > 1
    assert {w.parent.span_id for w in windows} == {run.context.span_id}
    assert {w.context.trace_id for w in windows} == {run.context.trace_id}
    pages = [s for s in spans() if s.name == "paycharge.gateway GET /charges"]
    window_ids = {w.context.span_id for w in windows}
    # The page fetcher's thread carries the window's context too.
    assert pages and all(p.parent.span_id in window_ids for p in pages)
