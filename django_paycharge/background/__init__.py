"""The background machinery, below the entry points: dispatch, drain, sweeps, periodic steps.

``django_paycharge.tasks`` (the tasks, under the names queues know them by) and
``django_paycharge.periodic`` are its public import paths; the management
commands, Celery, the views and the admin call those or this package, never the
other way round.
"""

from __future__ import annotations

from .dispatch import dispatch_announcement, dispatch_delivery, handoff, wake_payment_type_fill
from .drain import DELIVERY_RETRY_BACKOFF, DRAIN_BATCH, DRAIN_WINDOW, drains_deliveries, wake_drain
from .framework import (
    MODES,
    BackgroundTask,
    backend_alias,
    background_enabled,
    background_task,
    configured_backend_path,
    routed,
    tasks_framework,
)

__all__ = [
    "DELIVERY_RETRY_BACKOFF",
    "DRAIN_BATCH",
    "DRAIN_WINDOW",
    "MODES",
    "BackgroundTask",
    "backend_alias",
    "background_enabled",
    "background_task",
    "configured_backend_path",
    "dispatch_announcement",
    "dispatch_delivery",
    "drains_deliveries",
    "handoff",
    "routed",
    "tasks_framework",
    "wake_drain",
    "wake_payment_type_fill",
]
