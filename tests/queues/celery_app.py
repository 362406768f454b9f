"""The Celery app of the queue tests, as a shop would write it (docs/deployment.md).

Its broker is the tests' Redis server (``PAYCHARGE_TEST_REDIS_URL``). Publishing
does not retry for long: with the broker down, the webhook view must answer at
once and leave the delivery to the periodic sweep.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.queues.worker_settings")

app = Celery("paycharge_tests")
app.conf.update(
    broker_url=os.environ.get("PAYCHARGE_TEST_REDIS_URL", "redis://127.0.0.1:1/0"),
    task_publish_retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.1},
    broker_connection_timeout=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
# Our tasks: django_paycharge.tasks (the Django 6 backend registers them from there)
# and, for the Django 5.2 backend and beat, django_paycharge.celery's Celery tasks.
app.autodiscover_tasks(["django_paycharge"])
app.autodiscover_tasks(["django_paycharge"], related_name="celery")

if os.environ.get("PAYCHARGE_TEST_BEAT"):
    from datetime import timedelta

    from django_paycharge.celery import beat_schedule

    # The shop's one line; short periods so that the test sees beat run the sweep.
    app.conf.beat_schedule = beat_schedule(sweep_every=timedelta(seconds=1), queue="payments")
