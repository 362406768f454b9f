"""Our tasks, under the paths queues, settings and queued rows name them by.

Each flow defines and sends its own tasks (through :mod:`django_paycharge.queue`,
the Tasks adapter); every one is known to workers as
``django_paycharge.tasks.<name>``, which this module re-exports. Which backend
and queue: ``PAYCHARGE["TASK_BACKEND"]`` (an alias of Django's ``TASKS``) and
``PAYCHARGE["TASK_QUEUE"]``, read at each enqueue; ``PAYCHARGE["TASKS"]`` says
whether work goes there at all (see docs/deployment.md).
"""

from __future__ import annotations

from typing import Any

from .background.periodic import run_periodic_task
from .outbox import hear_announcement, hear_announcements, sweep_announcement_leases
from .queue import BackgroundTask
from .services.charges import fill_new_payment_types_task, fill_payment_types_task
from .services.recovery import recover_charge_requests_task
from .services.sync import sync_charges_task
from .services.webhooks import (
    drain_webhook_deliveries,
    process_webhook_delivery,
    sweep_webhook_leases,
)

__all__ = [
    "ALL_TASKS",
    "drain_webhook_deliveries",
    "fill_new_payment_types_task",
    "fill_payment_types_task",
    "hear_announcement",
    "hear_announcements",
    "process_webhook_delivery",
    "recover_charge_requests_task",
    "run_periodic_task",
    "sweep_announcement_leases",
    "sweep_webhook_leases",
    "sync_charges_task",
]

#: Every task, each once: what the checks bind to the configured backend and queue.
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
    hear_announcements,
    sweep_announcement_leases,
)
