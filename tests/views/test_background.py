"""Webhook processing through a real task backend (django-tasks-db) and its worker."""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

import pytest
from django.core.management import call_command
from django.db import connection

from django_paycharge import queue, services, tasks
from django_paycharge.models import Announcement, Charge, WebhookDelivery
from django_paycharge.services.webhooks import DRAIN_POLL, DRAIN_WINDOW, drain, drains_deliveries

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "whk-background-token"


@pytest.fixture
def background(settings, fake_gateway, drain_clock):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    assert queue.background_enabled()
    return fake_gateway


def test_the_view_enqueues_and_the_worker_processes(background, client):
    token = background.create_transaction_token("bank_transfer")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=800, currency="JPY")
    background.complete(str(charge.gateway_id))
    body = {
        "id": str(uuid.uuid4()),
        "event": "charge_finished",
        "data": background.charges[str(charge.gateway_id)],
    }
    response = client.post(
        "/payments/webhook/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "received"  # stored and queued, not processed in the request
    assert Charge.objects.get(pk=charge.pk).status == "pending"
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    delivery.refresh_from_db()
    assert delivery.status == "processed"
    assert delivery.attempts == 1
    assert Charge.objects.get(pk=charge.pk).status == "successful"


def test_inline_mode_ignores_the_backend(background, client, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "inline"}
    assert not queue.background_enabled()
    body = {"id": "d-inline", "event": "a_later_event", "data": {}}
    client.post(
        "/payments/webhook/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert WebhookDelivery.objects.get().status == "ignored"


def test_background_mode_without_a_backend_is_a_clear_error(settings):
    from django_paycharge.exceptions import ConfigurationError

    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "background"}
    if hasattr(settings, "TASKS"):
        del settings.TASKS
    with pytest.raises(ConfigurationError, match="no task backend"):
        queue.background_enabled()


@pytest.mark.parametrize(
    "backend",
    [
        "django.tasks.backends.immediate.ImmediateBackend",
        "django_tasks.backends.dummy.DummyBackend",
    ],
)
def test_auto_mode_does_not_count_immediate_or_dummy_backends(settings, backend):
    settings.TASKS = {"default": {"BACKEND": backend}}
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "auto"}
    assert not queue.background_enabled()


def post(client, body):
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(
        "/payments/webhook/",
        data=data,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )


def _waiting_drains():
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects.filter(
        task_path=cast(Any, tasks.drain_webhook_deliveries).module_path, status="READY"
    )


def test_one_waiting_drain_task_serves_many_deliveries(background, client):
    assert drains_deliveries()
    for n in range(5):
        assert post(client, {"id": f"d-many-{n}", "event": "a_later_event", "data": {}}).json() == {
            "status": "ok",
            "duplicate": False,
        }
    assert _waiting_drains().count() == 1  # not one task per delivery
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("ignored", 1)}
    assert not _waiting_drains().exists()


def test_a_drain_that_already_started_counts_only_within_its_window(
    background, client, drain_clock
):
    from django_tasks_db.models import DBTaskResult

    post(client, {"id": "d-first", "event": "a_later_event", "data": {}})
    # A worker claimed the drain task: it may have read the table already. It runs
    # on for DRAIN_WINDOW after it started (below): within that, a delivery counts on it.
    DBTaskResult.objects.update(status="RUNNING")
    post(client, {"id": "d-second", "event": "a_later_event", "data": {}})
    assert not _waiting_drains().exists()
    drain_clock.now += DRAIN_WINDOW
    post(client, {"id": "d-third", "event": "a_later_event", "data": {}})
    assert _waiting_drains().count() == 1  # past the window: asked again, woke a new one
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"ignored"}


def test_a_drain_ends_no_sooner_than_its_window_so_late_deliveries_are_taken(
    background, client, drain_clock, monkeypatch
):
    post(client, {"id": "d-early", "event": "a_later_event", "data": {}})
    waits: list[float] = []

    def a_receiver_stores_one_meanwhile(seconds):
        # While the drain waits out its window, a receiver that saw it waiting stores
        # another delivery and (covered by the window) asks nothing.
        if not waits:
            post(client, {"id": "d-late", "event": "a_later_event", "data": {}})
        waits.append(seconds)
        drain_clock.sleep(seconds)

    monkeypatch.setattr(drain, "_sleep", a_receiver_stores_one_meanwhile)
    started = drain_clock.now
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert waits and drain_clock.now - started >= DRAIN_WINDOW
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"ignored"}
    assert not _waiting_drains().exists()  # one drain took both


def test_a_drain_waiting_out_its_window_takes_a_late_delivery_within_a_poll(
    background, client, drain_clock, monkeypatch
):
    # The window is long (a receiver's check is made once per window); a delivery
    # stored while the drain waits it out is taken at its next look, not at the end.
    assert DRAIN_POLL < DRAIN_WINDOW
    post(client, {"id": "d-early", "event": "a_later_event", "data": {}})
    stored_at: list[float] = []
    taken_at: list[float] = []

    def a_receiver_stores_one_meanwhile(seconds):
        if not stored_at:
            post(client, {"id": "d-late", "event": "a_later_event", "data": {}})
            stored_at.append(drain_clock.now)
        elif not taken_at and WebhookDelivery.objects.get(delivery_id="d-late").status == "ignored":
            taken_at.append(drain_clock.now)
        drain_clock.sleep(seconds)

    monkeypatch.setattr(drain, "_sleep", a_receiver_stores_one_meanwhile)
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert taken_at and taken_at[0] - stored_at[0] <= DRAIN_POLL


def test_a_repeat_of_a_delivery_still_waiting_wakes_a_drain_again(background, client, monkeypatch):
    body = {"id": "d-woken-late", "event": "a_later_event", "data": {}}

    def broken_dispatch(pk):
        raise RuntimeError("task backend unreachable")

    monkeypatch.setattr("django_paycharge.views.webhooks.dispatch_delivery", broken_dispatch)
    assert post(client, body).status_code == 200  # stored: that is what the answer promises
    assert not _waiting_drains().exists()
    monkeypatch.undo()
    assert post(client, body).json() == {"status": "ok", "duplicate": True}  # the gateway's retry
    assert _waiting_drains().count() == 1
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert WebhookDelivery.objects.get().status == "ignored"


def test_deliveries_stored_as_failed_are_not_queued(background, client):
    from django_tasks_db.models import DBTaskResult

    assert post(client, b"{not json").status_code == 200
    assert WebhookDelivery.objects.get().status == "failed"
    assert not DBTaskResult.objects.exists()  # a body that never parses is not retried


def test_a_failing_webhook_received_receiver_still_answers_200(background, client, caplog):
    from django_tasks_db.models import DBTaskResult

    from django_paycharge import signals

    def broken(**kwargs):
        raise ValueError("receiver bug")

    signals.webhook_received.connect(broken, weak=False)
    try:
        response = post(client, {"id": "d-signal", "event": "a_later_event", "data": {}})
    finally:
        signals.webhook_received.disconnect(broken)
    assert response.status_code == 200
    assert WebhookDelivery.objects.get().status == "received"
    # Queued with it, whatever the receiver did; the announcements' lease sweep (the
    # outbox's own task) runs the receiver again.
    paths = sorted(DBTaskResult.objects.values_list("task_path", flat=True))
    assert [p.rsplit(".", 1)[1] for p in paths] == [
        "drain_webhook_deliveries", "sweep_announcement_leases", "sweep_announcement_leases",
    ]  # fmt: skip
    assert "broken of webhook_received failed (ValueError)" in caplog.text
    [row] = Announcement.objects.all()
    assert (row.status, row.attempts, row.last_error) == ("running", 1, "ValueError: receiver bug")


def test_other_backends_are_told_after_the_delivery_committed(settings, client, monkeypatch):
    from importlib.util import find_spec

    module = "django.tasks" if find_spec("django.tasks") else "django_tasks"
    settings.TASKS = {"default": {"BACKEND": f"{module}.backends.dummy.DummyBackend"}}
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TASKS": "background",
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
    }
    assert queue.background_enabled()
    assert not drains_deliveries()  # a task per delivery
    backend = type(tasks.process_webhook_delivery.get_backend())
    real_enqueue = backend.enqueue
    seen = []

    def enqueue(self, task, args, kwargs):
        # Outside any transaction: the delivery committed, another process finds it.
        seen.append((list(args), connection.in_atomic_block))
        return real_enqueue(self, task, args, kwargs)

    monkeypatch.setattr(backend, "enqueue", enqueue)
    assert post(client, {"id": "d-dummy", "event": "a_later_event", "data": {}}).status_code == 200
    assert seen == [([WebhookDelivery.objects.get().pk], False)]


def test_new_charges_payment_types_are_read_by_one_background_task(background):
    from django_tasks_db.models import DBTaskResult

    token = background.create_transaction_token("konbini")["id"]
    made = [
        services.create_charge(transaction_token_id=token, amount=800, currency="JPY")
        for _ in range(3)
    ]
    assert {c.payment_type for c in made} == {""}  # not read at the checkout
    fills = DBTaskResult.objects.filter(
        task_path=cast(Any, tasks.fill_new_payment_types_task).module_path, status="READY"
    )
    assert fills.count() == 1  # woken once, not per charge
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert set(Charge.objects.values_list("payment_type", flat=True)) == {"konbini"}
    assert not fills.exists()
