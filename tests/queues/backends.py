"""The task backends the queue tests run against, and their workers' command lines.

``PAYCHARGE_TEST_QUEUES`` (comma-separated; default all) picks them:

- ``db``: django-tasks-db and its ``db_worker``;
- ``rq``: django-tasks-rq on Redis and django-rq's ``rqworker``;
- ``celery``: Celery on Redis, a ``celery worker`` process: through
  django-tasks-celery on Django 6, through ``django_paycharge.celery`` on 5.2.

Each uses the alias ``paycharge`` and the queue ``payments`` (not the defaults),
so the tests also prove ``PAYCHARGE["TASK_BACKEND"]`` and ``["TASK_QUEUE"]`` route the work.
"""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from typing import Any

ALIAS = "paycharge"
QUEUE = "payments"
FRAMEWORK = "django.tasks" if find_spec("django.tasks") else "django_tasks"


def selected() -> list[str]:
    return [k for k in os.environ.get("PAYCHARGE_TEST_QUEUES", "db,rq,celery").split(",") if k]


def celery_backend() -> str:
    # django-tasks-celery needs Django 6 (django.tasks); on 5.2 our own thin backend.
    if FRAMEWORK == "django.tasks":
        return "django_tasks_celery.CeleryBackend"
    return "django_paycharge.celery.CeleryBackend"


def settings_for(kind: str, redis_url: str) -> dict[str, Any]:
    """Django settings (besides PAYCHARGE) for ``kind``, in the test and in the worker."""
    backend: dict[str, Any] = {"QUEUES": [QUEUE]}
    extra: dict[str, Any] = {}
    if kind == "db":
        backend["BACKEND"] = "django_tasks_db.DatabaseBackend"
    elif kind == "rq":
        backend["BACKEND"] = "django_tasks_rq.RQBackend"
        extra["RQ_QUEUES"] = {QUEUE: {"URL": redis_url, "DEFAULT_TIMEOUT": 60}}
    elif kind == "celery":
        backend["BACKEND"] = celery_backend()
        backend["OPTIONS"] = {"CELERY_APP": "tests.queues.celery_app.app"}
    else:
        raise ValueError(f"unknown queue kind {kind!r}")
    immediate = f"{FRAMEWORK}.backends.immediate.ImmediateBackend"
    return {"TASKS": {"default": {"BACKEND": immediate}, ALIAS: backend}, **extra}


def worker_command(kind: str, *, beat_schedule_file: str = "") -> list[str]:
    """The worker process a shop would run for ``kind`` (Celery: with beat embedded, given
    a schedule file)."""
    manage = [sys.executable, "-m", "django"]
    if kind == "db":
        return [
            *manage, "db_worker", "--backend", ALIAS, "--queue-name", QUEUE,
            "--interval", "0.1", "--no-startup-delay",
        ]  # fmt: skip
    if kind == "rq":
        return [
            *manage,
            "rqworker",
            QUEUE,
            "--job-class",
            "django_tasks_rq.Job",
            "--with-scheduler",
        ]
    # beat's default scheduler keeps its schedule in a shelve: on Python 3.13 that is
    # dbm.sqlite3, which on a loaded machine failed with "locking protocol" and stopped
    # beat. The entries are what is tested here, not beat's own bookkeeping.
    return [
        sys.executable, "-m", "celery", "-A", "tests.queues.celery_app", "worker",
        "-Q", QUEUE, "--pool", "solo", "--without-gossip", "--without-mingle",
        "--without-heartbeat", "--loglevel", "INFO",
        *(["--beat", "--schedule", beat_schedule_file, "--scheduler", "celery.beat:Scheduler"]
          if beat_schedule_file else []),
    ]  # fmt: skip
