"""The webhook flow's tasks: a delivery processed on a worker, and with django-tasks-db
the deliveries table as the queue, which tasks only wake (drains, lease sweeps)."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from ... import conf
from ...client.backoff import Backoff
from ...models import WebhookDelivery
from ...outbox import claim_next, claimant, give_up_exhausted, next_expiry, sweep_announcements
from ...queue import (
    BackgroundTask,
    background_task,
    ensure_run_after,
    on_database,
    routed,
    routed_task,
    task_waiting,
)
from .deliveries import MAX_ATTEMPTS, process_claimed, process_delivery

logger = logging.getLogger("django_paycharge.tasks")

# With django-tasks-db the deliveries table is the queue, and tasks only wake it.
#
# A task per delivery costs the receiver more than storing the delivery itself
# (docs/benchmarks.md, "receipt cost"). Instead, once its delivery committed, the
# receiver looks for a drain task that has not started yet (one query on the
# tasks' partial index of waiting rows) and enqueues one only if there is none.
# A drain that has not started reads the deliveries table after that commit, so
# it sees the delivery; a running one may not, which is why it does not count.
# A drain claims waiting and stuck deliveries one at a time (leased claims, see
# django_paycharge.outbox.leases) until none is left.
#
# One check serves a burst. A receiver that saw a drain waiting at time t (its own
# monotonic clock, read before it asked) skips the check for DRAIN_WINDOW after t:
# that drain started after t, and a drain does not end before DRAIN_WINDOW has
# passed since it started (it waits, then looks again), so it reads the table
# after every delivery such a receiver stored in the window. Only the clocks'
# rates matter, not their readings. A receiver that enqueued the drain itself
# counts from before the enqueue.
#
# A worker that dies mid-delivery leaves it claimed. After each claim, a task
# makes sure a sweep (a deferred drain) is due by the time that claim's lease
# runs out: the sweep takes over whatever is stuck then, and schedules itself
# again while live claims remain. So a dead worker strands nothing, cron or not.

#: Deliveries one drain task processes before it hands over to a new drain task
#: (other tasks in the queue get their turn).
DRAIN_BATCH = 200

#: Seconds a drain seen waiting is counted on by a receiver, and the least a drain
#: runs: the receipt's check (a query, and an enqueue when the last drain started)
#: is made once per window and process. At 50 ms it was a third of what our code
#: adds to the receipt (docs/benchmarks.md, "receipt cost").
DRAIN_WINDOW = 0.2

#: Seconds a drain waiting out its window sleeps between looks at the table: the
#: longest a delivery stored meanwhile waits for it.
DRAIN_POLL = 0.05

# Monotonic time until which the drain seen waiting covers new deliveries, by routed task.
_drain_covers: conf.SettingsCache[int, float] = conf.SettingsCache()

_clock: Callable[[], float] = time.monotonic

_sleep: Callable[[float], object] = time.sleep


@background_task
def process_webhook_delivery(delivery_pk: int, retry_failed: bool = False) -> str:
    """Process one stored webhook delivery; retried later (deferred) when it failed."""
    return process_then_retry_later(delivery_pk, retry_failed)


@background_task
def drain_webhook_deliveries() -> dict[str, int]:
    """Process waiting and stuck deliveries until none is left (django-tasks-db)."""
    return drain("drain_webhook_deliveries task", hold=DRAIN_WINDOW)


@background_task
def sweep_webhook_leases() -> dict[str, int]:
    """Take over deliveries and receivers whose lease ran out; again while claims remain."""
    return sweep_leases()


def drains_deliveries() -> bool:
    """Whether deliveries go through drain tasks: work goes to django-tasks-db."""
    return on_database(drain_webhook_deliveries)


def routed_drain() -> BackgroundTask[[], Any]:
    return routed_task(drain_webhook_deliveries)


def process_then_retry_later(delivery_pk: int, retry_failed: bool = False) -> str:
    """A delivery task's work: claim and process it, and retry it later when it failed."""
    status = process_delivery(
        delivery_pk,
        retry_failed=retry_failed,
        by=claimant("process_webhook_delivery task"),
        on_claimed=ensure_sweep_for if drains_deliveries() else None,
    )
    if status == "failed":
        retry_later(delivery_pk)
    return status


def sweep_leases() -> dict[str, int]:
    """The lease sweep's work: stuck deliveries, receivers due; again while claims remain."""
    counts = drain("sweep_webhook_leases task")
    heard = sweep_announcements("sweep_webhook_leases task")
    counts.update({f"announcements_{status}": n for status, n in heard.items()})
    expiry = next_expiry()
    if expiry is not None:
        ensure_sweep(expiry)
    return counts


def wake_drain(drain: BackgroundTask[[], Any] | None = None, *, recent: bool = True) -> None:
    """Make sure a drain task that has not started yet exists (call after a delivery committed).

    ``drain``: the drain task already routed to the configured backend, if at hand.
    ``recent``: a drain seen waiting within ``DRAIN_WINDOW`` will do (False: ask now).
    """
    task = drain or routed_drain()
    asked = _clock()
    covers = _drain_covers.current()
    if recent and asked < covers.get(id(task), 0.0):
        return  # a drain seen waiting moments ago reads the table after this commit
    if not task_waiting(task):
        task.enqueue()
    covers[id(task)] = asked + DRAIN_WINDOW


def drain(label: str, *, hold: float = 0.0) -> dict[str, int]:
    """Claim and process deliveries until none is left; ``hold``: not before that many
    seconds have passed since it started (see ``DRAIN_WINDOW``)."""
    by = claimant(label)
    started = _clock()
    counts: Counter[str] = Counter()
    give_up_exhausted(timezone.now())
    taken = 0
    while taken < DRAIN_BATCH:
        delivery = claim_next(by=by)
        if delivery is None:
            left = started + hold - _clock()
            if left <= 0:
                break
            # Receivers that saw this drain waiting may store more until then.
            _sleep(min(left, DRAIN_POLL))
            continue
        taken += 1
        ensure_sweep_for(delivery)
        status = process_claimed(delivery)
        counts[status] += 1
        if status == "failed":
            retry_later(delivery.pk)
    else:
        # More may be waiting: a new drain task takes them. (Asked now: the drain seen
        # waiting may have been this one, which ends without waiting out its window.)
        wake_drain(recent=False)
    return dict(counts)


def ensure_sweep_for(delivery: WebhookDelivery) -> None:
    if delivery.lease_until is None:
        return
    try:
        ensure_sweep(delivery.lease_until)
    except Exception:  # process it anyway: paycharge_process_webhooks also takes stuck ones
        logger.exception("Could not schedule the lease sweep for delivery %s", delivery.pk)


def ensure_sweep(expiry: datetime) -> None:
    """Make sure a sweep runs soon after ``expiry`` (one due earlier schedules itself again)."""
    ensure_run_after(sweep_webhook_leases, expiry)


#: A failed delivery's retry (full jitter: deliveries that failed together, while
#: the gateway was down, do not come back together).
DELIVERY_RETRY_BACKOFF = Backoff(base=5.0, cap=300.0)


def retry_later(delivery_pk: int) -> None:
    attempts = WebhookDelivery.objects.filter(pk=delivery_pk).values_list("attempts", flat=True)
    done = attempts.first() or MAX_ATTEMPTS
    if done >= MAX_ATTEMPTS:
        return
    task = routed(process_webhook_delivery)
    # Without deferral a retry would run at once, in a loop: leave it to
    # ``paycharge_process_webhooks --failed`` (and the periodic sweep) instead.
    if not task.get_backend().supports_defer:
        return
    delay = timedelta(seconds=DELIVERY_RETRY_BACKOFF.delay(done))
    task.using(run_after=timezone.now() + delay).enqueue(delivery_pk, True)
