"""The background-work settings: checks refuse what could never run; the hand-off hook."""

from __future__ import annotations

import json
import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from django_paycharge import tasks
from django_paycharge.checks import check_paycharge_settings
from django_paycharge.models import WebhookDelivery
from django_paycharge.queue import routed
from tests.waiting import run

FRAMEWORK = "django.tasks" if find_spec("django.tasks") else "django_tasks"
DUMMY = {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"}
TOKEN = "whk-settings-token"


def errors(settings, **paycharge):
    settings.PAYCHARGE = {**settings.PAYCHARGE, **paycharge}
    found = check_paycharge_settings()
    return [(m.id, m.msg) for m in found if (m.id or "").endswith(("E020", "E022"))]


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


@pytest.mark.parametrize(
    ("paycharge", "names"),
    [
        (
            {"TASK_BACKEND": "rq"},
            "TASK_BACKEND'] is 'rq', but TASKS has no such backend ('default')",
        ),
        ({"TASK_QUEUE": "payments"}, "TASK_QUEUE'] is 'payments', but backend 'default'"),
        ({"TASKS": "background", "TASK_BACKEND": "x"}, "'x', but TASKS has no such backend"),
    ],
)
def test_a_backend_or_queue_that_does_not_exist_is_named_by_its_own_check(
    settings, paycharge, names
):
    settings.TASKS = {"default": DUMMY}
    [(check_id, message)] = errors(settings, **paycharge)
    assert check_id == "django_paycharge.E022" and names in message


def test_a_backend_without_the_default_queue_is_a_working_configuration(settings):
    # docs/deployment.md's django-tasks-db excerpt: one backend, QUEUES without "default".
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["payments"]}
    }
    assert errors(settings, TASK_QUEUE="payments") == []
    task: Any = routed(tasks.process_webhook_delivery)  # the framework's own Task
    assert (task.backend, task.queue_name) == ("default", "payments")


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
    task: Any = routed(tasks.process_webhook_delivery)  # the framework's own Task
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
        data=json.dumps({"id": "d-handoff", "event": "a_later_event", "data": {}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert handed_off == [delivery.pk]
    assert not DBTaskResult.objects.exists()  # not in our queue
    assert delivery.status == "received"  # the shop's queue processes it, not the request
    from django_paycharge.services.webhooks.deliveries import process_delivery

    assert process_delivery(delivery.pk) == "ignored"


def test_check_refuses_a_backend_class_that_does_not_exist(settings):
    settings.TASKS = {"default": DUMMY, "jobs": {"BACKEND": "shop.nowhere.CeleryBackend"}}
    [(_id, message)] = errors(settings, TASK_BACKEND="jobs")
    assert "cannot run on" in message and "shop.nowhere.CeleryBackend" in message


@pytest.mark.slow
def test_manage_py_runs_with_a_backend_whose_queues_lack_default(tmp_path):
    # Binding our tasks to Django's "default" queue at import crashed every command here.
    (tmp_path / "queue_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n"
        "from tests.settings import PAYCHARGE\n"
        'TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", '
        '"QUEUES": ["payments"]}}\n'
        'PAYCHARGE = {**PAYCHARGE, "TASK_QUEUE": "payments"}\n'
    )
    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "queue_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)]),
    }
    done = run(
        [sys.executable, "-m", "django", "check", "--fail-level", "ERROR"], cwd=root, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "InvalidTask" not in done.stderr
