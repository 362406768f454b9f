"""Background processing through Django's Tasks framework, when a backend is configured.

``django.tasks`` on Django 6, the ``django-tasks`` backport on 5.2. Any backend
works: django-tasks-db, django-tasks-rq, django-tasks-celery (Django 6) or
:class:`django_paycharge.celery.CeleryBackend` (Django 5.2). Which one and
which queue: ``PAYCHARGE["TASK_BACKEND"]`` (an alias of Django's ``TASKS``)
and ``PAYCHARGE["TASK_QUEUE"]``, read at each enqueue. With
``PAYCHARGE["TASKS"] = "auto"`` (the default) work goes to that backend when
it runs work elsewhere, and inline otherwise; ``"inline"`` and
``"background"`` force either. ``PAYCHARGE["DELIVERY_HANDOFF"]`` hands stored
deliveries to a queue of the shop's own instead (see docs/deployment.md).

The tasks are defined here, where queues and settings know them
(``django_paycharge.tasks.process_webhook_delivery``...); what they do, and how
they are sent, is in :mod:`django_paycharge.background`.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from . import background, conf, services

# The public names of the mechanism, importable from here as before.
from .background import *  # noqa: F403
from .background import DRAIN_WINDOW, BackgroundTask, background_task, periodic
from .background.dispatch import fill_new_payment_types, process_delivery, sweep_leases
from .background.drain import drain
from .exceptions import SyncInProgressError
from .services.webhooks import announcements, leases

__all__ = [
    *background.__all__,
    "ALL_TASKS",
    "drain_webhook_deliveries",
    "fill_new_payment_types_task",
    "fill_payment_types_task",
    "hear_announcement",
    "process_webhook_delivery",
    "recover_charge_requests_task",
    "run_periodic_task",
    "sweep_webhook_leases",
    "sync_charges_task",
]

logger = logging.getLogger("django_paycharge.tasks")


@background_task
def process_webhook_delivery(delivery_pk: int, retry_failed: bool = False) -> str:
    """Process one stored webhook delivery (see services.webhooks.deliveries.process_delivery)."""
    return process_delivery(delivery_pk, retry_failed)


@background_task
def drain_webhook_deliveries() -> dict[str, int]:
    """Process waiting and stuck deliveries until none is left (django-tasks-db)."""
    return drain("drain_webhook_deliveries task", hold=DRAIN_WINDOW)


@background_task
def sweep_webhook_leases() -> dict[str, int]:
    """Take over deliveries and receivers whose lease ran out; again while claims remain."""
    return sweep_leases()


@background_task
def hear_announcement(announcement_pk: int) -> str:
    """Run one announcement's receiver again (services.webhooks.announcements); its status after."""
    return announcements.hear(announcement_pk, by=leases.claimant("hear_announcement task"))


@background_task
def sync_charges_task(account: str | None = None) -> dict[str, Any]:
    """Run an incremental sync of one account's charges; returns its counts."""
    try:
        return services.sync_charges(account).as_dict()
    except SyncInProgressError as exc:
        # The sync already running does this task's work: nothing failed.
        logger.info("Sync of account %s skipped: %s", account or conf.DEFAULT_ACCOUNT, exc)
        return {"skipped": str(exc)}


@background_task
def fill_payment_types_task(account: str | None = None, limit: int = 500) -> int:
    """Fill in the payment type of up to ``limit`` tokens' charges; returns how many."""
    return services.fill_payment_types(account, limit=limit)


@background_task
def fill_new_payment_types_task(limit: int = 100) -> int:
    """Fill in the payment type of new charges, every account's; woken after creates."""
    return fill_new_payment_types(limit)


@background_task
def recover_charge_requests_task(older_than_seconds: float = 30.0) -> dict[str, Any]:
    """Settle charge requests left in flight (see services.recover_charge_requests)."""
    result = services.recover_charge_requests(older_than=timedelta(seconds=older_than_seconds))
    return result.as_dict()


@background_task
def run_periodic_task(steps: list[str] | None = None) -> dict[str, Any]:
    """The periodic work (see :mod:`django_paycharge.periodic`); returns what each step did."""
    report: dict[str, Any] = periodic.run_periodic(steps).as_dict()
    return report


ALL_TASKS: tuple[BackgroundTask[..., Any], ...] = (
    process_webhook_delivery,
    drain_webhook_deliveries,
    sweep_webhook_leases,
    sync_charges_task,
    fill_payment_types_task,
    fill_new_payment_types_task,
    recover_charge_requests_task,
    run_periodic_task,
    hear_announcement,
)
