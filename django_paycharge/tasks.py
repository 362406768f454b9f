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
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from importlib import import_module
from importlib.util import find_spec
from typing import Any, ParamSpec, Protocol, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, router
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext

from . import conf, services
from .client.backoff import Backoff
from .exceptions import ConfigurationError, PayChargeError, SyncInProgressError
from .models import WebhookDelivery
from .services.charges import payment_types
from .services.webhooks import announcements, deliveries, leases

logger = logging.getLogger("django_paycharge.tasks")

P = ParamSpec("P")
T = TypeVar("T", covariant=True)

#: The values ``PAYCHARGE["TASKS"]`` accepts.
MODES = ("auto", "inline", "background")
# Backends that do not run work in the background: the immediate one (runs it
# inline anyway) and the dummy one (never runs it at all).
_NOT_BACKGROUND = ("ImmediateBackend", "DummyBackend")


class BackgroundTask(Protocol[P, T]):
    """What this module's tasks offer (a ``Task`` of whichever tasks framework is installed)."""

    def call(self, *args: P.args, **kwargs: P.kwargs) -> T: ...

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Any: ...

    def using(self, **options: Any) -> BackgroundTask[P, T]: ...

    def get_backend(self) -> Any: ...


class _InlineOnly:
    """Stands in for a task when no tasks framework is installed: it can only be called."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def _unavailable(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(
            gettext("No tasks framework is installed: install django-tasks on Django 5.2.")
        )

    enqueue = using = get_backend = _unavailable


# Cached: installed modules do not change while the process runs, and the webhook
# receiver asks on every delivery (docs/benchmarks.md, "receipt cost").
@functools.cache
def tasks_framework() -> Any | None:
    """``django.tasks`` on Django 6, the ``django_tasks`` backport on 5.2, or None."""
    for module in ("django.tasks", "django_tasks"):
        if find_spec(module):
            return import_module(module)
    return None


class _Unbound(_InlineOnly):
    """Stands in for a task that no configured backend and queue accepts (the checks say why)."""

    def _unavailable(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(
            gettext(
                "Our tasks cannot be bound to PAYCHARGE['TASK_BACKEND'] / ['TASK_QUEUE']: "
                "run manage.py check (django_paycharge.E022)."
            )
        )

    enqueue = using = get_backend = _unavailable


def background_task(func: Callable[P, T]) -> BackgroundTask[P, T]:
    """Make ``func`` a task; the backend finds it again by module and function name.

    Every send binds the task to the backend and queue configured then
    (:func:`routed`). The object made here is what a worker finds by that
    name, and making it validates it against a backend: it is made on the
    configured one, never on Django's ``default`` alias and queue, which a
    shop's ``TASKS`` may not have (that crashed every ``manage.py`` command).
    """
    framework = tasks_framework()
    if framework is None:
        return _InlineOnly(func)
    # A backend alias that does not exist (ImproperlyConfigured), a queue it does not
    # have (the framework's TaskException): the next candidate; the checks name it.
    refused = (
        ImproperlyConfigured,
        import_module(f"{framework.__name__}.exceptions").TaskException,
    )
    for alias, queue in _bindings():
        try:
            made: BackgroundTask[P, T] = framework.task(backend=alias, queue_name=queue)(func)
        except refused:
            continue
        return made
    return _Unbound(func)


def _bindings() -> list[tuple[str, str]]:
    """Backends and queues to make a task on: the configured ones first, then each backend's."""
    try:
        found = [(str(conf.get_setting("TASK_BACKEND")), str(conf.get_setting("TASK_QUEUE")))]
    except ConfigurationError:  # a malformed PAYCHARGE: the checks report it
        found = []
    tasks = getattr(settings, "TASKS", None) or {}
    for alias, entry in tasks.items() if isinstance(tasks, dict) else ():
        queues = entry.get("QUEUES") if isinstance(entry, dict) else None
        found.append((alias, str(queues[0]) if queues else "default"))
    return found


@background_task
def process_webhook_delivery(delivery_pk: int, retry_failed: bool = False) -> str:
    """Process one stored webhook delivery (see services.webhooks.deliveries.process_delivery)."""
    status = deliveries.process_delivery(
        delivery_pk,
        retry_failed=retry_failed,
        by=leases.claimant("process_webhook_delivery task"),
        on_claimed=_ensure_sweep_for if drains_deliveries() else None,
    )
    if status == "failed":
        _retry_later(delivery_pk)
    return status


@background_task
def drain_webhook_deliveries() -> dict[str, int]:
    """Process waiting and stuck deliveries until none is left (django-tasks-db)."""
    return _drain("drain_webhook_deliveries task", hold=DRAIN_WINDOW)


@background_task
def sweep_webhook_leases() -> dict[str, int]:
    """Take over deliveries and receivers whose lease ran out; again while claims remain."""
    counts = _drain("sweep_webhook_leases task")
    heard = announcements.hear_due(by=leases.claimant("sweep_webhook_leases task"))
    counts.update({f"announcements_{status}": n for status, n in heard.items()})
    expiries = [e for e in (leases.next_expiry(), announcements.next_due()) if e is not None]
    if expiries:
        _ensure_sweep(min(expiries))
    return counts


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
    filled = 0
    for name in conf.account_names():
        try:
            filled += services.fill_payment_types(name, limit=limit)
        except PayChargeError as exc:  # one account's gateway trouble stops not the others
            logger.warning("Payment types of account %s not filled: %s", name, exc)
    return filled


@background_task
def recover_charge_requests_task(older_than_seconds: float = 30.0) -> dict[str, Any]:
    """Settle charge requests left in flight (see services.recover_charge_requests)."""
    result = services.recover_charge_requests(older_than=timedelta(seconds=older_than_seconds))
    return result.as_dict()


@background_task
def run_periodic_task(steps: list[str] | None = None) -> dict[str, Any]:
    """The periodic work (see :mod:`django_paycharge.periodic`); returns what each step did."""
    from . import periodic  # periodic dispatches through this module

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


def backend_alias() -> str:
    """The alias of Django's ``TASKS`` our work goes to (``PAYCHARGE["TASK_BACKEND"]``)."""
    return str(conf.get_setting("TASK_BACKEND"))


def routed(task: BackgroundTask[P, T]) -> BackgroundTask[P, T]:
    """``task`` bound to the configured backend and queue (read now, not at import)."""
    return task.using(backend=backend_alias(), queue_name=str(conf.get_setting("TASK_QUEUE")))


def configured_backend_path() -> str:
    """The dotted path of the configured backend's class, or "" when ``TASKS`` has no such alias."""
    tasks = getattr(settings, "TASKS", None) or {}
    entry = tasks.get(backend_alias(), {}) if isinstance(tasks, dict) else {}
    return str(entry.get("BACKEND", "")) if isinstance(entry, dict) else ""


def background_enabled() -> bool:
    """Whether work goes to the task backend (see ``PAYCHARGE["TASKS"]``).

    ``"auto"`` uses it only when the configured alias names a backend that
    really runs work elsewhere: Django 6 always has a default (immediate)
    backend, and a dummy backend would never process a delivery.
    """
    mode = conf.get_setting("TASKS")
    if mode == "inline":
        return False
    backend = configured_backend_path()
    available = tasks_framework() is not None and bool(backend)
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
        drain = _routed_drain()
        if not retry_failed and _database_backend(drain):
            wake_drain(drain)
            return
        task = routed(process_webhook_delivery)
        task.enqueue(delivery_pk, True) if retry_failed else task.enqueue(delivery_pk)
    else:
        deliveries.process_delivery(
            delivery_pk, retry_failed=retry_failed, by=leases.claimant("inline processing")
        )


def dispatch_announcement(announcement_pk: int) -> None:
    """Run an announcement's receiver again: on our task backend, or inline without one."""
    if background_enabled():
        routed(hear_announcement).enqueue(announcement_pk)
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
        _ensure_sweep(due)
        return
    task = routed(hear_announcement)
    if task.get_backend().supports_defer:
        task.using(run_after=due + timedelta(seconds=1)).enqueue(announcement_pk)


def _watch_announcement_lease(lease_until: datetime) -> None:
    # Only where it is one query: a receiver's process that dies on django-tasks-db
    # is then run again by the lease sweep, cron or not (as for deliveries).
    if drains_deliveries():
        _ensure_sweep(lease_until)


announcements.retry_scheduler = schedule_announcement
announcements.lease_watcher = _watch_announcement_lease


def wake_payment_type_fill() -> None:
    """After a create: a fill of new charges' payment types runs soon (inline: the periodic
    step's). On django-tasks-db, only when no such task is waiting already: one that has
    not started reads the charges after this one committed."""
    if not background_enabled():
        return
    task = _routed_task(fill_new_payment_types_task)
    if _database_backend(task) and _task_waiting(task):
        return
    task.enqueue()


payment_types.fill_waker = wake_payment_type_fill


#: A failed delivery's retry (full jitter: deliveries that failed together, while
#: the gateway was down, do not come back together).
DELIVERY_RETRY_BACKOFF = Backoff(base=5.0, cap=300.0)


def _retry_later(delivery_pk: int) -> None:
    attempts = WebhookDelivery.objects.filter(pk=delivery_pk).values_list("attempts", flat=True)
    done = attempts.first() or deliveries.MAX_ATTEMPTS
    if done >= deliveries.MAX_ATTEMPTS:
        return
    task = routed(process_webhook_delivery)
    # Without deferral a retry would run at once, in a loop: leave it to
    # ``paycharge_process_webhooks --failed`` (and the periodic sweep) instead.
    if not task.get_backend().supports_defer:
        return
    delay = timedelta(seconds=DELIVERY_RETRY_BACKOFF.delay(done))
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
# (alias, with a time bound) -> SQL of "is such a task waiting"
_waiting_sql: dict[tuple[str, bool], str] = {}


def drains_deliveries() -> bool:
    """Whether deliveries go through drain tasks: work goes to django-tasks-db."""
    return background_enabled() and _database_backend(_routed_drain())


# (task, backend alias, queue) -> the task routed there. Routing a task validates
# it anew each time, which the receiver (and the checkout) would pay on every call.
_routed_tasks: dict[tuple[int, str, str], BackgroundTask[..., Any]] = {}


def _routed_drain() -> BackgroundTask[[], Any]:
    return _routed_task(drain_webhook_deliveries)


def _routed_task(task: BackgroundTask[..., Any]) -> BackgroundTask[..., Any]:
    key = (id(task), backend_alias(), str(conf.get_setting("TASK_QUEUE")))
    if key not in _routed_tasks:
        _routed_tasks[key] = routed(task)
    return _routed_tasks[key]


def _database_backend(drain: BackgroundTask[[], Any]) -> bool:
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
    task = drain or _routed_drain()
    asked = _clock()
    if recent and asked < _drain_covers.get(id(task), 0.0):
        return  # a drain seen waiting moments ago reads the table after this commit
    if not _task_waiting(task):
        task.enqueue()
    _drain_covers[id(task)] = asked + DRAIN_WINDOW


@conf.on_settings_reset
def _forget_drains() -> None:
    _drain_covers.clear()


def _drain(label: str, *, hold: float = 0.0) -> dict[str, int]:
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
        _ensure_sweep_for(delivery)
        status = deliveries.process_claimed(delivery)
        counts[status] += 1
        if status == "failed":
            _retry_later(delivery.pk)
    else:
        # More may be waiting: a new drain task takes them. (Asked now: the drain seen
        # waiting may have been this one, which ends without waiting out its window.)
        wake_drain(recent=False)
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
    task = routed(sweep_webhook_leases)
    if not _task_waiting(task, due=due):
        task.using(run_after=due).enqueue()


def _task_waiting(task: Any, due: datetime | None = None) -> bool:
    """Whether ``task`` is queued in django-tasks-db and not started (due by ``due``, if given).

    Raw SQL on the receiver's path: the ORM's version of this query costs more
    than the statement (docs/benchmarks.md, "receipt cost").
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
