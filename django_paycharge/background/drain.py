"""With django-tasks-db the deliveries table is the queue, and tasks only wake it."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import router
from django.utils import timezone

from .. import conf
from ..client.backoff import Backoff
from ..models import WebhookDelivery
from ..services.webhooks import deliveries, leases
from .framework import BackgroundTask, backend_alias, background_enabled, routed, task_named

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
# services.webhooks.leases) until none is left.
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
#: runs: the receipt's check (a query) is made once per window and process.
DRAIN_WINDOW = 0.05

# Monotonic time until which the drain seen waiting covers new deliveries, by routed task.
_drain_covers: dict[int, float] = {}

_clock: Callable[[], float] = time.monotonic

_sleep: Callable[[float], object] = time.sleep


def drains_deliveries() -> bool:
    """Whether deliveries go through drain tasks: work goes to django-tasks-db."""
    return background_enabled() and database_backend(routed_drain())


# (task, backend alias, queue) -> the task routed there. Routing a task validates
# it anew each time, which the receiver (and the checkout) would pay on every call.
_routed_tasks: dict[tuple[int, str, str], BackgroundTask[..., Any]] = {}


def routed_drain() -> BackgroundTask[[], Any]:
    return routed_task(task_named("drain_webhook_deliveries"))


def routed_task(task: BackgroundTask[..., Any]) -> BackgroundTask[..., Any]:
    key = (id(task), backend_alias(), str(conf.get_setting("TASK_QUEUE")))
    if key not in _routed_tasks:
        _routed_tasks[key] = routed(task)
    return _routed_tasks[key]


def database_backend(drain: BackgroundTask[[], Any]) -> bool:
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:
        return False
    return isinstance(drain.get_backend(), DatabaseBackend)


def wake_drain(drain: BackgroundTask[[], Any] | None = None, *, recent: bool = True) -> None:
    """Make sure a drain task that has not started yet exists (call after a delivery committed).

    ``drain``: the drain task already routed to the configured backend, if at hand.
    ``recent``: a drain seen waiting within ``DRAIN_WINDOW`` will do (False: ask now).
    """
    task = drain or routed_drain()
    asked = _clock()
    if recent and asked < _drain_covers.get(id(task), 0.0):
        return  # a drain seen waiting moments ago reads the table after this commit
    if not task_waiting(task):
        task.enqueue()
    _drain_covers[id(task)] = asked + DRAIN_WINDOW


@conf.on_settings_reset
def _forget_drains() -> None:
    _drain_covers.clear()


def drain(label: str, *, hold: float = 0.0) -> dict[str, int]:
    """Claim and process deliveries until none is left; ``hold``: not before that many
    seconds have passed since it started (see ``DRAIN_WINDOW``)."""
    by = leases.claimant(label)
    started = _clock()
    counts: Counter[str] = Counter()
    leases.give_up_exhausted(timezone.now())
    taken = 0
    while taken < DRAIN_BATCH:
        delivery = leases.claim_next(by=by)
        if delivery is None:
            left = started + hold - _clock()
            if left <= 0:
                break
            _sleep(left)  # receivers that saw this drain waiting may store more until then
            continue
        taken += 1
        ensure_sweep_for(delivery)
        status = deliveries.process_claimed(delivery)
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
    due = expiry + timedelta(seconds=1)
    task = routed(task_named("sweep_webhook_leases"))
    if not task_waiting(task, due=due):
        task.using(run_after=due).enqueue()


def task_waiting(task: Any, due: datetime | None = None) -> bool:
    """Whether ``task`` is queued in django-tasks-db and not started (due by ``due``, if given).

    Through django-tasks-db's model: its queryset's ``ready()`` also asks that the
    task be due now, and a deferred sweep is waiting long before that.
    """
    from django_tasks_db.models import DBTaskResult

    ready = DBTaskResult._meta.get_field("status").get_default()  # how a queued task starts out
    waiting = DBTaskResult.objects.using(router.db_for_write(DBTaskResult)).filter(
        status=ready, task_path=task.module_path, backend_name=task.backend
    )
    if due is not None:
        waiting = waiting.filter(run_after__lte=due)
    return waiting.exists()


#: A failed delivery's retry (full jitter: deliveries that failed together, while
#: the gateway was down, do not come back together).
DELIVERY_RETRY_BACKOFF = Backoff(base=5.0, cap=300.0)


def retry_later(delivery_pk: int) -> None:
    attempts = WebhookDelivery.objects.filter(pk=delivery_pk).values_list("attempts", flat=True)
    done = attempts.first() or deliveries.MAX_ATTEMPTS
    if done >= deliveries.MAX_ATTEMPTS:
        return
    task = routed(task_named("process_webhook_delivery"))
    # Without deferral a retry would run at once, in a loop: leave it to
    # ``paycharge_process_webhooks --failed`` (and the periodic sweep) instead.
    if not task.get_backend().supports_defer:
        return
    delay = timedelta(seconds=DELIVERY_RETRY_BACKOFF.delay(done))
    task.using(run_after=timezone.now() + delay).enqueue(delivery_pk, True)
