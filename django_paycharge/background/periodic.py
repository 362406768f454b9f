"""The periodic work, in one place: what cron and Celery beat run (docs/deployment.md).

Its public path is ``django_paycharge.periodic``.

Steps, in this order (each runs even when an earlier one failed):

- ``sweep``: send on webhook deliveries stored but never processed (their task
  was lost: the broker was down, a worker died before taking it), stuck ones
  (their worker died while processing them: the lease ran out) and failed
  ones due for another attempt;
- ``announcements``: run again the receivers whose process died or that raised
  (their lease or back-off ran out), and count the announcements not heard:
  the command exits non-zero while any is (see docs/signals.md);
- ``recover``: settle charge requests left in flight by a crash or a lost answer;
- ``sync``: an incremental sync of every account's charges and webhook configurations;
- ``payment_types``: fill in payment types the bulk sync could not know;
- ``prune``: delete deliveries, and heard announcements, older than
  ``DELIVERY_RETENTION_DAYS``.

``manage.py paycharge_periodic`` runs them from cron;
:func:`django_paycharge.celery.beat_schedule` gives Celery beat entries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from .. import conf, services
from ..exceptions import SyncInProgressError
from ..outbox import count_not_heard, dispatch_announcement, due_announcements, prune_announcements
from ..queue import background_task
from ..services.webhooks import dispatch_delivery, pending_deliveries, prune_deliveries

logger = logging.getLogger("django_paycharge.periodic")

STEPS = ("sweep", "announcements", "recover", "sync", "payment_types", "prune")


@dataclass
class PeriodicReport:
    """What each step did (its counts), and the steps that failed (their error)."""

    done: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"done": self.done, "failed": self.failed}


def sweep_deliveries(*, older_than: timedelta | None = None) -> dict[str, int]:
    """Send on deliveries waiting longer than ``older_than`` (default ``SWEEP_AFTER``).

    Each goes where a new one would (the shop's hand-off, the task backend,
    or inline). Sending one twice is harmless: processing claims a delivery
    first, and a processed one is left alone. A broker still down raises on
    the first one: the rest wait for the next run.
    """
    if older_than is None:
        older_than = timedelta(seconds=float(conf.get_setting("SWEEP_AFTER")))
    due = pending_deliveries(failed=True, before=timezone.now() - older_than)
    for pk in due:
        dispatch_delivery(pk, retry_failed=True)
    if due:
        logger.info("Sweep sent on %d webhook deliveries", len(due))
    return {"sent": len(due)}


class StepFailed(Exception):
    """A step that ran, with counts, and found damage it could not mend (``counts`` kept)."""

    def __init__(self, message: str, counts: dict[str, Any]) -> None:
        super().__init__(message)
        self.counts = counts


def sweep_announcements() -> dict[str, int]:
    """Run again the receivers due (their lease or back-off ran out); fail while any is not heard.

    Each goes where a new delivery would go (our task backend, or inline); running
    one twice is harmless: it is claimed first.
    """
    due = due_announcements()
    for pk in due:
        dispatch_announcement(pk)
    if due:
        logger.info("Sent on %d announcements whose receivers are due again", len(due))
    counts = {"sent": len(due), "not_heard": count_not_heard()}
    if counts["not_heard"]:
        raise StepFailed(
            f"{counts['not_heard']} announcements were not heard by every receiver after "
            "every attempt: see Announcements (not heard) in the admin",
            counts,
        )
    return counts


class SyncFailed(StepFailed):
    """Some accounts could not be synced; ``counts`` holds those that were."""


def sync_all_accounts() -> dict[str, Any]:
    """An incremental sync of every configured account (charges, then webhook configurations)."""
    counts: dict[str, Any] = {}
    errors: list[str] = []
    for account in conf.account_names():
        try:  # one account's failure (credentials, the gateway) leaves the others to run
            counts[account] = {
                "charges": services.sync_charges(account).as_dict(),
                "webhooks": services.sync_webhooks(account).as_dict(),
            }
        except SyncInProgressError as exc:  # the sync already running does this work
            logger.info("Periodic sync of account %s skipped: %s", account, exc)
            counts[account] = {"skipped": str(exc)}
        except Exception as exc:
            logger.exception("Periodic sync of account %s failed", account)
            errors.append(f"{account}: {type(exc).__name__}: {exc}")
    if errors:
        raise SyncFailed("; ".join(errors), counts)
    return counts


def _fill_all() -> dict[str, int]:
    return {name: services.fill_payment_types(name) for name in conf.account_names()}


def _recover() -> dict[str, Any]:
    """Every request that moves money left in flight (per kind under "by_kind")."""
    return services.recover_requests().as_dict()


def _prune() -> dict[str, int]:
    days = int(conf.get_setting("DELIVERY_RETENTION_DAYS"))
    deleted, kept = prune_deliveries(older_than_days=days)
    heard = prune_announcements(older_than_days=days)
    return {"deleted": deleted, "kept_unprocessed": kept, "announcements_deleted": heard}


_RUNNERS: dict[str, Callable[[], Any]] = {
    "sweep": sweep_deliveries,
    "announcements": sweep_announcements,
    "recover": _recover,
    "sync": sync_all_accounts,
    "payment_types": _fill_all,
    "prune": _prune,
}


def run_periodic(steps: Iterable[str] | None = None) -> PeriodicReport:
    """Run ``steps`` (all of :data:`STEPS` by default) in order; a failure stops only its step."""
    wanted = list(steps) if steps is not None else list(STEPS)
    unknown = sorted(set(wanted) - set(STEPS))
    if unknown:
        raise ValueError(f"Unknown periodic steps {unknown}; known: {', '.join(STEPS)}.")
    report = PeriodicReport()
    for step in STEPS:
        if step not in wanted:
            continue
        try:
            report.done[step] = _RUNNERS[step]()
        except StepFailed as exc:  # it ran: its counts too
            report.done[step] = exc.counts
            report.failed[step] = str(exc)[:500]
        except Exception as exc:  # the other steps still run; cron and beat see the failure
            logger.exception("Periodic step %s failed", step)
            report.failed[step] = f"{type(exc).__name__}: {exc}"[:500]
    return report


@background_task
def run_periodic_task(steps: list[str] | None = None) -> dict[str, Any]:
    """The periodic work (see :mod:`django_paycharge.periodic`); returns what each step did."""
    return run_periodic(steps).as_dict()
