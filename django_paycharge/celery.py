"""Celery for shops that run it: a tasks backend for Django 5.2, and Celery beat entries.

Optional (``pip install "django-paycharge[celery]"``). On Django 6, use
django-tasks-celery's backend for Django's ``TASKS``. On Django 5.2 no Celery
backend exists for the django-tasks backport: :class:`CeleryBackend` is a thin
one. It sends each task to Celery as one message for the Celery task
``django_paycharge.run_task``, which runs it in the worker::

    TASKS = {
        "default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
        "celery": {
            "BACKEND": "django_paycharge.celery.CeleryBackend",
            "QUEUES": ["payments"],
            "OPTIONS": {"CELERY_APP": "shop.celery.app"},
        },
    }
    PAYCHARGE = {..., "TASK_BACKEND": "celery", "TASK_QUEUE": "payments"}

and in the shop's Celery module (the one ``celery -A shop worker -Q payments`` loads)::

    from django_paycharge.celery import beat_schedule  # registers our Celery tasks too
    app.conf.beat_schedule = {**beat_schedule(), **your_own_entries}

This module imports no model at import time, so the Celery module can import
it before Django is set up.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from celery import current_app, shared_task
from django.utils import timezone
from django.utils.module_loading import import_string

RUN_TASK = "django_paycharge.run_task"
PERIODIC = "django_paycharge.periodic"

_FRAMEWORK = "django.tasks" if find_spec("django.tasks") else "django_tasks"

if TYPE_CHECKING:
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskResult, TaskResultStatus
else:
    BaseTaskBackend = import_module(f"{_FRAMEWORK}.backends.base").BaseTaskBackend
    _base = import_module(f"{_FRAMEWORK}.base")
    Task, TaskResult, TaskResultStatus = _base.Task, _base.TaskResult, _base.TaskResultStatus


def _run_task(module_path: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run the task at ``module_path`` in this worker (``CeleryBackend``'s messages)."""
    task = import_string(module_path)
    # A message names the code to run: only ever a task, never any importable callable.
    if not isinstance(task, Task):
        raise TypeError(f"{module_path} is not a task")
    return task.call(*args, **kwargs)


def _periodic(steps: list[str] | None = None) -> dict[str, Any]:
    """The periodic work (see :mod:`django_paycharge.periodic`), for Celery beat."""
    from .periodic import run_periodic

    report: dict[str, Any] = run_periodic(steps).as_dict()
    return report


# Registered with every Celery app that finalizes after this import (Celery's own
# shared_task). Results are not kept: the database says what happened.
run_task = shared_task(name=RUN_TASK, ignore_result=True)(_run_task)
periodic = shared_task(name=PERIODIC, ignore_result=True)(_periodic)


def beat_schedule(
    *,
    sweep_every: timedelta = timedelta(minutes=1),
    sync_every: timedelta = timedelta(minutes=10),
    prune_every: timedelta = timedelta(days=1),
    queue: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Celery beat entries for the periodic work (the same steps as ``paycharge_periodic``).

    Lost deliveries, receivers due again and charge requests in flight are
    picked up every minute;
    accounts are synced (and payment types filled) every ten minutes; old
    deliveries are pruned once a day. ``queue``: the Celery queue to send them to.
    """
    options = {"queue": queue} if queue else {}
    entries = {
        "paycharge-sweep-recover": (sweep_every, ["sweep", "announcements", "recover"]),
        "paycharge-sync": (sync_every, ["sync", "payment_types"]),
        "paycharge-prune": (prune_every, ["prune"]),
    }
    return {
        name: {
            "task": PERIODIC,
            "schedule": every.total_seconds(),
            "kwargs": {"steps": steps},
            "options": dict(options),
        }
        for name, (every, steps) in entries.items()
    }


class CeleryBackend(BaseTaskBackend):
    """A Django tasks backend that sends tasks to Celery (``OPTIONS["CELERY_APP"]``, or
    Celery's current app). Results are not kept: ``get_result`` is not supported."""

    supports_defer = True

    def _app(self) -> Any:
        path = self.options.get("CELERY_APP")
        return import_string(path) if path else current_app

    def enqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any]:
        self.validate_task(task)
        options: dict[str, Any] = {}
        # "default" is Django's name for "no particular queue": Celery's own default then.
        if task.queue_name != "default":
            options["queue"] = task.queue_name
        if task.run_after is not None:
            options["eta"] = task.run_after
        message_id = str(uuid.uuid4())
        self._app().send_task(
            RUN_TASK,
            args=[task.module_path, list(args), dict(kwargs)],
            task_id=message_id,
            **options,
        )
        return TaskResult(
            task=task,
            id=message_id,
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
