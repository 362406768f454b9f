"""The periodic work that cron and Celery beat run: its public import path.

The steps live in :mod:`django_paycharge.background.periodic`; see there, and
docs/deployment.md.
"""

from __future__ import annotations

from .background.periodic import (
    STEPS,
    PeriodicReport,
    StepFailed,
    SyncFailed,
    run_periodic,
    sweep_announcements,
    sweep_deliveries,
    sync_all_accounts,
)

__all__ = [
    "STEPS",
    "PeriodicReport",
    "StepFailed",
    "SyncFailed",
    "run_periodic",
    "sweep_announcements",
    "sweep_deliveries",
    "sync_all_accounts",
]
