"""The receipt's one-statement insert, its ORM fallback, and what a delivery costs in queries."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_paycharge.models import WebhookDelivery
from django_paycharge.services.mirror import inserts as _insert_once
from django_paycharge.services.webhooks import DRAIN_WINDOW, drains_deliveries
from django_paycharge.services.webhooks.deliveries import _ONCE

pytestmark = pytest.mark.django_db

TOKEN = "whk-receipt-token-0123456789"


def values(key: str, **extra):
    return {
        "account": "default",
        "event": "a_later_event",
        "delivery_id": key,
        "dedupe_key": f"id:{key}",
        "body": "{}",
        "headers": {"User-Agent": "gateway"},
        "received_at": timezone.now(),
        **extra,
    }


def insert(row):
    return _insert_once.insert_once(WebhookDelivery, row, conflict=_ONCE)


@pytest.mark.parametrize("orm", [False, True], ids=["one statement", "ORM fallback"])
def test_insert_stores_every_field_once_per_account(monkeypatch, orm):
    if orm:
        monkeypatch.setattr(_insert_once, "_has_upsert", lambda connection: False)
    pk = insert(values("a"))
    assert pk is not None
    row = WebhookDelivery.objects.get(pk=pk)
    assert (row.status, row.attempts, row.last_error, row.lease_until) == ("received", 0, "", None)
    assert row.headers == {"User-Agent": "gateway"} and row.claimed_by == ""
    assert insert(values("a")) is None  # a repeat
    assert insert(values("a", account="osaka")) is not None
    assert WebhookDelivery.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_delivery_costs_one_statement_while_a_drain_seen_waiting_covers_it(
    settings, client, fake_gateway, drain_clock
):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    assert drains_deliveries()

    def post(n):
        body = {"id": f"d-{n}", "event": "a_later_event", "data": {}}
        with CaptureQueriesContext(connection) as queries:
            response = client.post(
                "/payments/webhook/", data=json.dumps(body), content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
            )  # fmt: skip
        assert response.status_code == 200
        return [q["sql"].split()[0] for q in queries.captured_queries]

    first = post(1)  # stores it, finds no waiting drain, enqueues one
    assert first[:2] == ["INSERT", "SELECT"] and len(first) > 2
    # Within the window, the drain enqueued (or seen waiting) covers the next ones:
    # the insert alone. (A drain runs at least that long: test_background.)
    assert post(2) == ["INSERT"]
    drain_clock.now += DRAIN_WINDOW / 2
    assert post(3) == ["INSERT"]
    # After it: the insert and the check, nothing else while the drain waits.
    drain_clock.now += DRAIN_WINDOW / 2
    assert post(4) == ["INSERT", "SELECT"]
    # A repeat: no row inserted, the stored one read (and still covered: no check).
    assert post(4) == ["INSERT", "SELECT"]
    drain_clock.now += DRAIN_WINDOW
    assert post(4) == ["INSERT", "SELECT", "SELECT"]
