"""Settings of a worker process started by the queue tests.

The test suite's settings, on the parent's test database
(``PAYCHARGE_CHILD_DB_NAME``), with the parent's ``PAYCHARGE`` overrides
(``PAYCHARGE_CHILD_SETTINGS``, JSON: the fake gateway server's address) and the
task backend of ``PAYCHARGE_TEST_QUEUE`` on ``PAYCHARGE_TEST_REDIS_URL``.
"""

from __future__ import annotations

import json
import os

from tests.queues.backends import settings_for
from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS, PAYCHARGE

_kind = os.environ["PAYCHARGE_TEST_QUEUE"]
globals().update(settings_for(_kind, os.environ.get("PAYCHARGE_TEST_REDIS_URL", "")))
if _kind == "rq":
    INSTALLED_APPS = [*INSTALLED_APPS, "django_rq"]
if os.environ.get("PAYCHARGE_TEST_RECEIVER_DIR"):
    INSTALLED_APPS = [*INSTALLED_APPS, "tests.queues.shop"]  # a shop's receiver
PAYCHARGE = {**PAYCHARGE, **json.loads(os.environ.get("PAYCHARGE_CHILD_SETTINGS", "{}"))}
# The worker's log is what a failed wait prints (tests/queues/conftest.py): with the time of
# each line, and Celery's, RQ's and django-tasks' own lines (a task received, started,
# finished), which Celery sends to loggers that nothing else here configures.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "timed": {"format": "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "timed"}},
    "loggers": {
        name: {"level": "INFO", "handlers": ["console"], "propagate": False}
        for name in (
            "django_paycharge",
            "celery",
            "rq",
            "django_tasks",
            "django_tasks_db",
        )
    },
}
