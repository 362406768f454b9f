"""The background-work settings: checks refuse what could never run; the hand-off hook."""

from __future__ import annotations

import json
from importlib.util import find_spec

import pytest

from django_paycharge import tasks
from django_paycharge.checks import check_paycharge_settings
from django_paycharge.models import WebhookDelivery

FRAMEWORK = "django.tasks" if find_spec("django.tasks") else "django_tasks"
DUMMY = {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"}
TOKEN = "whk-settings-token"


def errors(settings, **paycharge):
    settings.PAYCHARGE = {**settings.PAYCHARGE, **paycharge}
    return [(m.id, m.msg) for m in check_paycharge_settings() if m.id.endswith("E020")]


@pytest.mark.parametrize(
    ("paycharge", "says"),
    [
        ({"TASKS": "celery"}, "PAYCHARGE['TASKS'] is 'celery'"),
        ({"TASK_BACKEND": "rq"}, "TASKS has no such backend"),
        ({"TASK_BACKEND": ""}, "PAYCHARGE['TASK_BACKEND'] must be"),
        ({"TASK_QUEUE": ""}, "PAYCHARGE['TASK_QUEUE'] must be"),
        ({"TASK_QUEUE": "payments"}, "payments"),  # the backend only has "default"
        ({"DELIVERY_HANDOFF": "shop.nowhere.hand_off"}, "DELIVERY_HANDOFF"),
        ({"DELIVERY_HANDOFF": 3}, "DELIVERY_HANDOFF"),
        ({"SWEEP_AFTER": -1}, "SWEEP_AFTER"),
        ({"DELIVERY_RETENTION_DAYS": 0}, "DELIVERY_RETENTION_DAYS"),
    ],
)
def test_check_refuses_task_settings_that_cannot_work(settings, paycharge, says):
    settings.TASKS = {"default": DUMMY}
    found = errors(settings, **paycharge)
    assert len(found) == 1 and says in found[0][1], found


def test_check_accepts_a_named_backend_and_one_of_its_queues(settings):
    settings.TASKS = {"default": DUMMY, "jobs": {**DUMMY, "QUEUES": ["payments"]}}
    assert errors(settings, TASK_BACKEND="jobs", TASK_QUEUE="payments") == []
    assert errors(settings, DELIVERY_HANDOFF="tests.test_task_settings.hand_off") == []


def test_background_mode_needs_the_named_backend(settings):
    settings.TASKS = {"default": DUMMY}
    assert errors(settings, TASKS="background") == []
    assert "no such backend" in errors(settings, TASKS="background", TASK_BACKEND="x")[0][1]


def test_work_goes_to_the_named_backend_and_queue(settings):
    settings.TASKS = {"default": DUMMY, "jobs": {**DUMMY, "QUEUES": ["payments"]}}
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASK_BACKEND": "jobs", "TASK_QUEUE": "payments"}
    task = tasks.routed(tasks.process_webhook_delivery)
    assert (task.backend, task.queue_name) == ("jobs", "payments")
    assert task.get_backend().alias == "jobs"


handed_off: list[int] = []


def hand_off(delivery: WebhookDelivery) -> None:
    """A shop's hook: its own queue would take the delivery from here."""
    handed_off.append(delivery.pk)


@pytest.mark.django_db(transaction=True)
def test_the_handoff_hook_gets_stored_deliveries_instead_of_our_queue(settings, client):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
        "DELIVERY_HANDOFF": "tests.test_task_settings.hand_off",
    }
    from django_tasks_db.models import DBTaskResult

    handed_off.clear()
    response = client.post(
        "/payments/webhook/",
        data=json.dumps({"id": "d-handoff", "event": "token_created", "data": {}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert handed_off == [delivery.pk]
    assert not DBTaskResult.objects.exists()  # not in our queue
    assert delivery.status == "received"  # the shop's queue processes it, not the request
    from django_paycharge.services.deliveries import process_delivery

    assert process_delivery(delivery.pk) == "ignored"


def test_check_refuses_a_backend_class_that_does_not_exist(settings):
    settings.TASKS = {"default": DUMMY, "jobs": {"BACKEND": "shop.nowhere.CeleryBackend"}}
    [(_id, message)] = errors(settings, TASK_BACKEND="jobs")
    assert "cannot run on" in message and "shop.nowhere.CeleryBackend" in message
