"""Leased processing: a claim records when, and one past its lease is taken over.

The dead processes themselves (SIGKILL of real workers) are in
tests/reliability/test_dead_workers.py; here the stuck state is made directly.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any, cast

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from django_paycharge import tasks
from django_paycharge.models import WebhookDelivery
from django_paycharge.outbox import leases
from django_paycharge.services.webhooks import deliveries, drains_deliveries

pytestmark = pytest.mark.django_db

TOKEN = "whk-lease-token-0123456789"


@pytest.fixture
def hook(fake_gateway, settings, client):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
        "WEBHOOK_LEASE_SECONDS": 60,
    }
    return client


def post(client, body):
    return client.post(
        "/payments/webhook/", data=json.dumps(body), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )  # fmt: skip


def stored(**fields) -> WebhookDelivery:
    n = uuid.uuid4().hex
    values = {
        "event": "a_later_event",
        "delivery_id": n,
        "dedupe_key": f"id:{n}",
        "body": json.dumps({"id": n, "event": "a_later_event", "data": {}}),
        "received_at": timezone.now(),
    }
    return WebhookDelivery.objects.create(**{**values, **fields})


def stuck(**fields) -> WebhookDelivery:
    """A delivery whose worker died: claimed, and the lease ran out."""
    long_ago = timezone.now() - timedelta(minutes=10)
    claim = {
        "status": "processing", "attempts": 1, "claimed_at": long_ago,
        "lease_until": long_ago + timedelta(seconds=60), "claimed_by": "db_worker (dead pid 1)",
    }  # fmt: skip
    return stored(**{**claim, **fields})


def live(**fields) -> WebhookDelivery:
    """A delivery a live worker is processing."""
    now = timezone.now()
    return stored(
        status="processing", attempts=1, claimed_at=now, lease_until=now + timedelta(seconds=60),
        claimed_by="db_worker (alive)", **fields,
    )  # fmt: skip


def test_a_claim_records_who_when_and_until_when(hook):
    delivery = stored()
    before = timezone.now()
    claimed = leases.claim(delivery.pk, by="tester")
    assert claimed is not None and claimed.status == "processing"
    assert claimed.claimed_at >= before
    assert claimed.lease_until == claimed.claimed_at + timedelta(seconds=60)
    assert claimed.claimed_by == "tester" and claimed.attempts == 1
    assert leases.claim(delivery.pk, by="another") is None  # the lease holds
    assert deliveries.process_claimed(claimed) == "ignored"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.lease_until, delivery.claimed_by) == (
        "ignored", None, "tester",
    )  # fmt: skip


def test_a_live_claim_is_left_alone(hook):
    delivery = live()
    assert deliveries.process_delivery(delivery.pk) == deliveries.BUSY
    assert deliveries.process_delivery(delivery.pk, force=True) == deliveries.BUSY
    assert deliveries.pending_deliveries(failed=True) == []
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("processing", 1)


def test_a_claim_past_its_lease_is_taken_over(hook):
    delivery = stuck()
    assert delivery.is_stuck() and delivery.awaits_processing()
    assert deliveries.pending_deliveries() == [delivery.pk]
    assert deliveries.process_delivery(delivery.pk, by="next run") == "ignored"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.claimed_by) == ("ignored", 2, "next run")


def test_a_row_left_processing_before_leases_existed_is_stuck(hook):
    delivery = stored(status="processing", attempts=1)  # no claimed_at, no lease: an upgrade
    assert delivery.is_stuck()
    assert deliveries.process_delivery(delivery.pk) == "ignored"


@pytest.mark.parametrize("failed", [False, True])
def test_the_command_takes_over_stuck_deliveries(hook, capsys, failed):
    delivery, other = stuck(), live()
    call_command("paycharge_process_webhooks", *(["--failed"] if failed else []))
    out = capsys.readouterr().out
    assert "ignored 1" in out and "1 were stuck" in out
    delivery.refresh_from_db()
    other.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("ignored", 2)
    assert "paycharge_process_webhooks" in delivery.claimed_by
    assert other.status == "processing"  # still someone's


def test_a_delivery_that_killed_every_worker_is_left_failed(hook, capsys):
    delivery = stuck(attempts=leases.MAX_ATTEMPTS)
    with pytest.raises(CommandError, match="1 deliveries failed"):
        call_command("paycharge_process_webhooks", "--failed")
    assert "died 5 times" in capsys.readouterr().out
    delivery.refresh_from_db()
    assert delivery.status == "failed" and "never finished" in delivery.last_error
    assert delivery.lease_until is None
    # Still there for the admin's Reprocess (forced), once the cause is fixed.
    assert deliveries.process_delivery(delivery.pk, force=True) == "ignored"


def test_a_redelivery_of_a_stuck_delivery_is_processed(hook):
    delivery = stuck()
    body = json.loads(delivery.body)
    assert post(hook, body).json() == {"status": "ok", "duplicate": True}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("ignored", 2)


def test_a_redelivery_of_a_live_delivery_is_not_processed_again(hook):
    delivery = live()
    assert post(hook, json.loads(delivery.body)).json() == {"status": "ok", "duplicate": True}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("processing", 1)


def test_a_result_after_the_lease_was_taken_over_is_not_kept(hook):
    delivery = stored()
    first = leases.claim(delivery.pk, by="slow worker")
    # The slow worker's lease runs out; the next run takes it over.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )
    second = leases.claim(delivery.pk, by="next run")
    assert second is not None
    assert deliveries.process_claimed(first) == deliveries.BUSY  # its result is dropped
    delivery.refresh_from_db()
    assert (delivery.status, delivery.claimed_by) == ("processing", "next run")
    assert deliveries.process_claimed(second) == "ignored"


def test_a_worker_shutting_down_gives_its_claim_back(hook, monkeypatch):
    delivery = stored()
    claimed = leases.claim(delivery.pk, by="worker")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(deliveries, "_apply", interrupted)
    with pytest.raises(KeyboardInterrupt):
        deliveries.process_claimed(claimed)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.lease_until) == ("received", 0, None)


def test_pruning_keeps_deliveries_not_processed_yet(hook, capsys):
    old = timezone.now() - timedelta(days=40)
    done, waiting, claimed = stored(status="processed"), stored(), stuck()
    WebhookDelivery.objects.update(received_at=old)
    call_command("paycharge_prune_webhooks", "--older-than", "30")
    out = capsys.readouterr().out
    assert "Deleted 1 " in out and "Kept 2 " in out
    assert set(WebhookDelivery.objects.values_list("pk", flat=True)) == {waiting.pk, claimed.pk}
    assert not WebhookDelivery.objects.filter(pk=done.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_a_task_claim_schedules_a_sweep_for_when_its_lease_runs_out(hook, settings):
    from django_tasks_db.models import DBTaskResult

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    assert drains_deliveries()
    delivery = stored()
    tasks.drain_webhook_deliveries.call()
    sweeps = DBTaskResult.objects.filter(
        task_path=cast(Any, tasks.sweep_webhook_leases).module_path
    )
    assert sweeps.count() == 1
    delivery.refresh_from_db()
    assert delivery.claimed_at is not None
    assert sweeps.get().run_after == delivery.claimed_at + timedelta(seconds=61)
    stored()
    tasks.drain_webhook_deliveries.call()
    assert sweeps.count() == 1  # one waiting sweep covers the later claims too


@pytest.mark.django_db(transaction=True)
def test_the_sweep_takes_over_and_reschedules_while_claims_remain(hook, settings):
    from django_tasks_db.models import DBTaskResult

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    dead, busy = stuck(), live()
    assert tasks.sweep_webhook_leases.call() == {"ignored": 1}
    dead.refresh_from_db()
    assert (dead.status, dead.attempts) == ("ignored", 2)
    sweeps = DBTaskResult.objects.filter(
        task_path=cast(Any, tasks.sweep_webhook_leases).module_path
    )
    # One for the claim it just made, and one for the live claim it found.
    assert busy.lease_until is not None
    assert busy.lease_until + timedelta(seconds=1) in {s.run_after for s in sweeps}
    WebhookDelivery.objects.filter(pk=busy.pk).update(status="processed", lease_until=None)
    sweeps.delete()
    assert tasks.sweep_webhook_leases.call() == {}
    assert not DBTaskResult.objects.exists()  # nothing claimed: the sweep stops


@pytest.mark.parametrize("value", [0, -1, "300", True, None, 86401])
def test_a_malformed_lease_is_an_error_naming_the_key(settings, value):
    from django.core.checks import run_checks

    from django_paycharge import conf
    from django_paycharge.exceptions import ConfigurationError

    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_LEASE_SECONDS": value}
    with pytest.raises(ConfigurationError, match=r"PAYCHARGE\['WEBHOOK_LEASE_SECONDS'\]"):
        conf.webhook_lease()
    assert "django_paycharge.E008" in {m.id for m in run_checks()}


def test_a_lease_shorter_than_a_gateway_request_is_warned_about(settings):
    from django.core.checks import run_checks

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TIMEOUT": (5, 30),
        "MAX_RETRIES": 3,
        "RETRY_BACKOFF_MAX": 8,
        "WEBHOOK_LEASE_SECONDS": 60,
    }
    [warning] = [m for m in run_checks() if m.id == "django_paycharge.W005"]
    assert "(60 s)" in warning.msg and "(164 s)" in warning.msg  # (5 + 30) x 4 + 8 x 3
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_LEASE_SECONDS": 300}
    assert "django_paycharge.W005" not in {m.id for m in run_checks()}
