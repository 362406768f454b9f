"""Where a stored delivery, an announcement or a fill goes: the shop's hand-off, a task, or inline.

Also the work of the tasks that need more than one call (``django_paycharge.tasks``
holds the tasks themselves, under the names queues know them by).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.utils.module_loading import import_string

from .. import conf, services
from ..exceptions import PayChargeError
from ..models import WebhookDelivery
from ..services.charges import payment_types
from ..services.webhooks import announcements, deliveries, leases
from .drain import (
    database_backend,
    drain,
    drains_deliveries,
    ensure_sweep,
    ensure_sweep_for,
    retry_later,
    routed_drain,
    routed_task,
    task_waiting,
    wake_drain,
)
from .framework import background_enabled, routed, task_named

logger = logging.getLogger("django_paycharge.tasks")


def process_delivery(delivery_pk: int, retry_failed: bool = False) -> str:
    """A delivery task's work: process it, and retry it later when it failed."""
    status = deliveries.process_delivery(
        delivery_pk,
        retry_failed=retry_failed,
        by=leases.claimant("process_webhook_delivery task"),
        on_claimed=ensure_sweep_for if drains_deliveries() else None,
    )
    if status == "failed":
        retry_later(delivery_pk)
    return status


def sweep_leases() -> dict[str, int]:
    """The lease sweep's work: stuck deliveries, receivers due; again while claims remain."""
    counts = drain("sweep_webhook_leases task")
    heard = announcements.hear_due(by=leases.claimant("sweep_webhook_leases task"))
    counts.update({f"announcements_{status}": n for status, n in heard.items()})
    expiries = [e for e in (leases.next_expiry(), announcements.next_due()) if e is not None]
    if expiries:
        ensure_sweep(min(expiries))
    return counts


def fill_new_payment_types(limit: int = 100) -> int:
    """Fill in the payment type of new charges, every account's; how many."""
    filled = 0
    for name in conf.account_names():
        try:
            filled += services.fill_payment_types(name, limit=limit)
        except PayChargeError as exc:  # one account's gateway trouble stops not the others
            logger.warning("Payment types of account %s not filled: %s", name, exc)
    return filled


def handoff() -> Callable[[WebhookDelivery], object] | None:
    """The shop's ``PAYCHARGE["DELIVERY_HANDOFF"]`` callable, or None."""
    hook = conf.get_setting("DELIVERY_HANDOFF")
    if not hook:
        return None
    func: Callable[[WebhookDelivery], object] = (
        import_string(hook) if isinstance(hook, str) else hook
    )
    return func


def dispatch_delivery(delivery_pk: int, *, retry_failed: bool = False) -> None:
    """Send a stored delivery on: to the shop's hand-off, our task backend, or inline.

    Called after the delivery committed; ``retry_failed`` also takes a failed
    delivery again (the sweep's retries). With django-tasks-db a waiting or
    stuck delivery wakes a drain task (see below) instead of getting a task
    of its own. An exception (a broker that is down) propagates; the delivery
    stays ``received`` and the periodic sweep
    (:func:`django_paycharge.periodic.sweep_deliveries`) sends it on later.
    """
    hook = handoff()
    if hook is not None:
        delivery = WebhookDelivery.objects.filter(pk=delivery_pk).first()
        if delivery is not None:
            hook(delivery)
    elif background_enabled():
        drain = routed_drain()
        if not retry_failed and database_backend(drain):
            wake_drain(drain)
            return
        task = routed(task_named("process_webhook_delivery"))
        task.enqueue(delivery_pk, True) if retry_failed else task.enqueue(delivery_pk)
    else:
        deliveries.process_delivery(
            delivery_pk, retry_failed=retry_failed, by=leases.claimant("inline processing")
        )


def dispatch_announcement(announcement_pk: int) -> None:
    """Run an announcement's receiver again: on our task backend, or inline without one."""
    if background_enabled():
        routed(task_named("hear_announcement")).enqueue(announcement_pk)
    else:
        announcements.hear(announcement_pk, by=leases.claimant("inline hearing"))


def schedule_announcement(announcement_pk: int, due: datetime) -> None:
    """Wake a worker when a failed receiver is due again (inline: the periodic sweep does).

    On django-tasks-db the lease sweep, scheduled once for whatever is due
    first, runs it; elsewhere a deferred task of its own.
    """
    if not background_enabled():
        return
    if drains_deliveries():
        ensure_sweep(due)
        return
    task = routed(task_named("hear_announcement"))
    if task.get_backend().supports_defer:
        task.using(run_after=due + timedelta(seconds=1)).enqueue(announcement_pk)


def _watch_announcement_lease(lease_until: datetime) -> None:
    # Only where it is one query: a receiver's process that dies on django-tasks-db
    # is then run again by the lease sweep, cron or not (as for deliveries).
    if drains_deliveries():
        ensure_sweep(lease_until)


announcements.retry_scheduler = schedule_announcement

announcements.lease_watcher = _watch_announcement_lease


def wake_payment_type_fill() -> None:
    """After a create: a fill of new charges' payment types runs soon (inline: the periodic
    step's). On django-tasks-db, only when no such task is waiting already: one that has
    not started reads the charges after this one committed."""
    if not background_enabled():
        return
    task = routed_task(task_named("fill_new_payment_types_task"))
    if database_backend(task) and task_waiting(task):
        return
    task.enqueue()


payment_types.fill_waker = wake_payment_type_fill
