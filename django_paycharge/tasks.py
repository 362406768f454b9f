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

import logging
from collections.abc import Callable
from datetime import timedelta
from importlib import import_module
from importlib.util import find_spec
from typing import Any, ParamSpec, Protocol, TypeVar

from django.conf import settings
from django.db import router
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext

from . import conf, services
from .exceptions import ConfigurationError, SyncInProgressError
from .models import WebhookDelivery
from .services import deliveries

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


def tasks_framework() -> Any | None:
    """``django.tasks`` on Django 6, the ``django_tasks`` backport on 5.2, or None."""
    for module in ("django.tasks", "django_tasks"):
        if find_spec(module):
            return import_module(module)
    return None


def background_task(func: Callable[P, T]) -> BackgroundTask[P, T]:
    """Make ``func`` a task; the backend finds it again by module and function name."""
    framework = tasks_framework()
    if framework is None:
        return _InlineOnly(func)
    made: BackgroundTask[P, T] = framework.task()(func)
    return made


@background_task
def process_webhook_delivery(delivery_pk: int, retry_failed: bool = False) -> str:
    """Process one stored webhook delivery (see services.deliveries.process_delivery)."""
    status = deliveries.process_delivery(delivery_pk, retry_failed=retry_failed)
    if status == "failed":
        _retry_later(delivery_pk)
    return status


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
    sync_charges_task,
    fill_payment_types_task,
    recover_charge_requests_task,
    run_periodic_task,
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
    delivery again (the sweep's retries). An exception (a broker that is down)
    propagates; the delivery stays ``received`` and the periodic sweep
    (:func:`django_paycharge.periodic.sweep_deliveries`) sends it on later.
    """
    hook = handoff()
    if hook is not None:
        delivery = WebhookDelivery.objects.filter(pk=delivery_pk).first()
        if delivery is not None:
            hook(delivery)
    elif background_enabled():
        task = routed(process_webhook_delivery)
        task.enqueue(delivery_pk, True) if retry_failed else task.enqueue(delivery_pk)
    else:
        deliveries.process_delivery(delivery_pk, retry_failed=retry_failed)


def enqueues_with_deliveries() -> bool:
    """Whether a delivery's task can be enqueued in the transaction that stores it.

    True when work goes to django-tasks-db and its tasks are written to the
    database the deliveries are written to: the task is then a row committed
    with the delivery (one commit, and a crash between the two can no longer
    leave a delivery stored but never queued). Any other backend, and a
    shop's hand-off, is only told after the delivery committed, or its worker
    could look for a delivery that is not there yet.
    """
    if handoff() is not None or not background_enabled():
        return False
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:
        return False
    if not isinstance(routed(process_webhook_delivery).get_backend(), DatabaseBackend):
        return False
    from django_tasks_db.models import DBTaskResult

    return bool(router.db_for_write(DBTaskResult) == router.db_for_write(WebhookDelivery))


def enqueue_delivery(delivery: WebhookDelivery) -> None:
    """Enqueue the processing of ``delivery`` (``store_delivery``'s ``on_stored``)."""
    routed(process_webhook_delivery).enqueue(delivery.pk)


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
    delay = timedelta(seconds=min(300, 5 * 2**done))
    task.using(run_after=timezone.now() + delay).enqueue(delivery_pk, True)


def _register_with_configured_backend() -> None:
    # Binding a task to a backend validates it there, which is when a Celery
    # backend registers it with Celery: without this, a worker whose default
    # backend is another one would not know our tasks. Best effort: a wrong
    # alias is reported by the system checks, not at import.
    if tasks_framework() is None:
        return
    try:
        for task in ALL_TASKS:
            routed(task)
    except Exception:  # an unknown alias, or settings not ready: checks report it
        logger.debug("Tasks not bound to the configured backend yet", exc_info=True)


_register_with_configured_backend()
