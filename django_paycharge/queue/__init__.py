"""The Tasks adapter, below the services: which backend, which queue, inline or not, run when.

Each flow makes and sends its own tasks through it (:func:`background_task`,
:func:`routed`); ``django_paycharge.tasks`` re-exports them under the paths
queues know.
"""

from __future__ import annotations

from .database import (
    database_backend,
    ensure_run_after,
    on_database,
    routed_task,
    task_waiting,
)
from .framework import (
    MODES,
    PUBLIC_MODULE,
    BackgroundTask,
    backend_alias,
    background_enabled,
    background_task,
    configured_backend_path,
    routed,
    tasks_framework,
)

__all__ = [
    "MODES",
    "PUBLIC_MODULE",
    "BackgroundTask",
    "backend_alias",
    "background_enabled",
    "background_task",
    "configured_backend_path",
    "database_backend",
    "ensure_run_after",
    "on_database",
    "routed",
    "routed_task",
    "task_waiting",
    "tasks_framework",
]
