"""Background processing through Django's Tasks framework, when a backend is configured.

``django.tasks`` on Django 6, the ``django-tasks`` backport on 5.2. With
``PAYCHARGE["TASKS"] = "auto"`` (the default) work goes to the task backend
when the ``TASKS`` setting names one, and runs inline otherwise; ``"inline"``
and ``"background"`` force either.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections, router
from django.utils import timezone
from django.utils.translation import gettext

from . import conf, services
from .exceptions import ConfigurationError
from .models import WebhookDelivery
from .services import deliveries, leases

logger = logging.getLogger("django_paycharge.tasks")


def _task_decorator() -> Callable[..., Any] | None:
    # django.tasks on Django 6; the backport on 5.2; neither: inline only.
    for module in ("django.tasks", "django_tasks"):
        if find_spec(module):
            decorator: Callable[..., Any] = import_module(module).task
            return decorator
    return None


_task = _task_decorator()


def _process(delivery_pk: int, retry_failed: bool) -> str:
    status = deliveries.process_delivery(
        delivery_pk,
        retry_failed=retry_failed,
        by=leases.claimant("process_webhook_delivery task"),
        on_claimed=_ensure_sweep_for if drains_deliveries() else None,
    )
    if status == "failed":
        _retry_later(delivery_pk)
    return status


def _sync(account: str | None) -> dict[str, Any]:
    return services.sync_charges(account).as_dict()


# The task backend finds a task again by its module and function name, so each
# task is bound to the module attribute of its function's own name. To mypy they
# are Task objects of whichever tasks framework is installed: typed as Any.
if TYPE_CHECKING:
    process_webhook_delivery: Any
    drain_webhook_deliveries: Any
    sweep_webhook_leases: Any
    sync_charges_task: Any
else:

    def process_webhook_delivery(delivery_pk, retry_failed=False):
        """Process one stored webhook delivery (see services.deliveries.process_delivery)."""
        return _process(delivery_pk, retry_failed)

    def drain_webhook_deliveries():
        """Process waiting and stuck deliveries until none is left (django-tasks-db)."""
        return _drain("drain_webhook_deliveries task")

    def sweep_webhook_leases():
        """Take over deliveries whose claim's lease ran out; again while claims remain."""
        counts = _drain("sweep_webhook_leases task")
        expiry = leases.next_expiry()
        if expiry is not None:
            _ensure_sweep(expiry)
        return counts

    def sync_charges_task(account=None):
        """Run an incremental sync of charges; returns its counts."""
        return _sync(account)

    if _task is not None:
        process_webhook_delivery = _task()(process_webhook_delivery)
        drain_webhook_deliveries = _task()(drain_webhook_deliveries)
        sweep_webhook_leases = _task()(sweep_webhook_leases)
        sync_charges_task = _task()(sync_charges_task)


# Backends that do not run work in the background: Django 6's default
# (immediate: runs inline anyway) and the dummy one (never runs it at all).
_NOT_BACKGROUND = ("ImmediateBackend", "DummyBackend")


def _default_backend() -> str:
    tasks = getattr(settings, "TASKS", None) or {}
    default = tasks.get("default", {}) if isinstance(tasks, dict) else {}
    return str(default.get("BACKEND", "")) if isinstance(default, dict) else ""


def background_enabled() -> bool:
    """Whether work goes to the task backend (see ``PAYCHARGE["TASKS"]``).

    ``"auto"`` uses it only when Django's ``TASKS`` names a backend that really
    runs work elsewhere: Django 6 always has a default (immediate) backend, and
    a dummy backend would never process a delivery.
    """
    mode = conf.get_setting("TASKS")
    if mode == "inline":
        return False
    backend = _default_backend()
    available = _task is not None and bool(backend)
    if mode == "background":
        if not available:
            raise ConfigurationError(
                gettext(
                    "PAYCHARGE['TASKS'] is 'background' but no task backend is configured: set "
                    "TASKS (and install django-tasks on Django 5.2)."
                )
            )
        return True
    return available and not backend.endswith(_NOT_BACKGROUND)


def dispatch_delivery(delivery_pk: int) -> None:
    """Have a stored delivery processed: inline, by a drain task, or by a task of its own.

    Called after the delivery committed. With django-tasks-db a drain task is
    woken (see below); with another backend the delivery gets a task; without
    one it is processed here.
    """
    if not background_enabled():
        deliveries.process_delivery(delivery_pk, by=leases.claimant("webhook view"))
    elif _database_backend():
        wake_drain()
    else:
        process_webhook_delivery.enqueue(delivery_pk)


def _retry_later(delivery_pk: int) -> None:
    attempts = WebhookDelivery.objects.filter(pk=delivery_pk).values_list("attempts", flat=True)
    done = attempts.first() or deliveries.MAX_ATTEMPTS
    if done >= deliveries.MAX_ATTEMPTS:
        return
    task = process_webhook_delivery
    # Without deferral a retry would run at once, in a loop: leave it to
    # ``paycharge_process_webhooks --failed`` instead.
    if not task.get_backend().supports_defer:
        return
    delay = timedelta(seconds=min(300, 5 * 2**done))
    task.using(run_after=timezone.now() + delay).enqueue(delivery_pk, True)


# With django-tasks-db the deliveries table is the queue, and tasks only wake it.
#
# A task per delivery cost the receiver more than storing the delivery itself
# (bench/webhooks.py, "receipt cost"). Instead, once its delivery committed, the
# receiver looks for a drain task that has not started yet (one query on the
# tasks' partial index of waiting rows) and enqueues one only if there is none.
# A drain that has not started reads the deliveries table after that commit, so
# it sees the delivery; a running one may not, which is why it does not count.
# A drain claims waiting and stuck deliveries one at a time (leased claims, see
# services.leases) until none is left.
#
# A worker that dies mid-delivery leaves it claimed. After each claim, a task
# makes sure a sweep (a deferred drain) is due by the time that claim's lease
# runs out: the sweep takes over whatever is stuck then, and schedules itself
# again while live claims remain. So a dead worker strands nothing, cron or not.

#: Deliveries one drain task processes before it hands over to a new drain task
#: (other tasks in the queue get their turn).
DRAIN_BATCH = 200
# (alias, with a time bound) -> SQL of "is such a task waiting"
_waiting_sql: dict[tuple[str, bool], str] = {}


def drains_deliveries() -> bool:
    """Whether deliveries go through drain tasks: work goes to django-tasks-db."""
    return background_enabled() and _database_backend()


def _database_backend() -> bool:
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:
        return False
    return isinstance(drain_webhook_deliveries.get_backend(), DatabaseBackend)


def wake_drain() -> None:
    """Make sure a drain task that has not started yet exists (call after a delivery committed)."""
    if not _task_waiting(drain_webhook_deliveries):
        drain_webhook_deliveries.enqueue()


def _drain(label: str) -> dict[str, int]:
    by = leases.claimant(label)
    counts: Counter[str] = Counter()
    leases.give_up_exhausted(timezone.now())
    for _ in range(DRAIN_BATCH):
        delivery = leases.claim_next(by=by)
        if delivery is None:
            break
        _ensure_sweep_for(delivery)
        status = deliveries.process_claimed(delivery)
        counts[status] += 1
        if status == "failed":
            _retry_later(delivery.pk)
    else:
        wake_drain()  # more may be waiting: a new drain task takes them
    return dict(counts)


def _ensure_sweep_for(delivery: WebhookDelivery) -> None:
    if delivery.lease_until is None:
        return
    try:
        _ensure_sweep(delivery.lease_until)
    except Exception:  # process it anyway: paycharge_process_webhooks also takes stuck ones
        logger.exception("Could not schedule the lease sweep for delivery %s", delivery.pk)


def _ensure_sweep(expiry: datetime) -> None:
    """Make sure a sweep runs soon after ``expiry`` (one due earlier schedules itself again)."""
    due = expiry + timedelta(seconds=1)
    if not _task_waiting(sweep_webhook_leases, due=due):
        sweep_webhook_leases.using(run_after=due).enqueue()


def _task_waiting(task: Any, due: datetime | None = None) -> bool:
    """Whether ``task`` is queued in django-tasks-db and not started (due by ``due``, if given).

    Raw SQL on the receiver's path: the ORM's version of this query costs
    several times the statement (bench/webhooks.py, "receipt cost").
    """
    from django_tasks_db.models import DBTaskResult

    alias = router.db_for_write(DBTaskResult)
    connection = connections[alias]
    meta = DBTaskResult._meta
    key = (alias, due is not None)
    if key not in _waiting_sql:
        quote = connection.ops.quote_name

        def column(name: str) -> str:
            return quote(str(getattr(meta.get_field(name), "column", name)))

        _waiting_sql[key] = (
            f"SELECT 1 FROM {quote(meta.db_table)} WHERE {column('status')} = %s "  # noqa: S608 - names, not values
            f"AND {column('task_path')} = %s AND {column('backend_name')} = %s"
            + (f" AND {column('run_after')} <= %s" if due is not None else "")
            + " LIMIT 1"
        )
    ready = meta.get_field("status").get_default()  # READY: how a queued task starts out
    params: list[Any] = [ready, task.module_path, task.backend]
    if due is not None:
        params.append(meta.get_field("run_after").get_db_prep_value(due, connection))
    with connection.cursor() as cursor:
        cursor.execute(_waiting_sql[key], params)
        return cursor.fetchone() is not None
