"""Background processing through Django's Tasks framework, when a backend is configured.

``django.tasks`` on Django 6, the ``django-tasks`` backport on 5.2. With
``PAYCHARGE["TASKS"] = "auto"`` (the default) work goes to the task backend
when the ``TASKS`` setting names one, and runs inline otherwise; ``"inline"``
and ``"background"`` force either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import router
from django.utils import timezone
from django.utils.translation import gettext

from . import conf, services
from .exceptions import ConfigurationError, SyncInProgressError
from .models import WebhookDelivery
from .services import deliveries

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
    status = deliveries.process_delivery(delivery_pk, retry_failed=retry_failed)
    if status == "failed":
        _retry_later(delivery_pk)
    return status


def _sync(account: str | None) -> dict[str, Any]:
    try:
        return services.sync_charges(account).as_dict()
    except SyncInProgressError as exc:
        # The sync already running does this task's work: nothing failed.
        logger.info("Sync of account %s skipped: %s", account or conf.DEFAULT_ACCOUNT, exc)
        return {"skipped": str(exc)}


# The task backend finds a task again by its module and function name, so each
# task is bound to the module attribute of its function's own name. To mypy they
# are Task objects of whichever tasks framework is installed: typed as Any.
if TYPE_CHECKING:
    process_webhook_delivery: Any
    sync_charges_task: Any
else:

    def process_webhook_delivery(delivery_pk, retry_failed=False):
        """Process one stored webhook delivery (see services.deliveries.process_delivery)."""
        return _process(delivery_pk, retry_failed)

    def sync_charges_task(account=None):
        """Run an incremental sync of charges; returns its counts."""
        return _sync(account)

    if _task is not None:
        process_webhook_delivery = _task()(process_webhook_delivery)
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
    """Process a stored delivery in the background, or inline when there is no backend."""
    if background_enabled():
        process_webhook_delivery.enqueue(delivery_pk)
    else:
        deliveries.process_delivery(delivery_pk)


def enqueues_with_deliveries() -> bool:
    """Whether a delivery's task can be enqueued in the transaction that stores it.

    True when work goes to django-tasks-db and its tasks are written to the
    database the deliveries are written to: the task is then a row committed
    with the delivery (one commit, and a crash between the two can no longer
    leave a delivery stored but never queued). Any other backend is only
    told after the delivery committed, or its worker could look for a
    delivery that is not there yet.
    """
    if not background_enabled():
        return False
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:
        return False
    if not isinstance(process_webhook_delivery.get_backend(), DatabaseBackend):
        return False
    from django_tasks_db.models import DBTaskResult

    return bool(router.db_for_write(DBTaskResult) == router.db_for_write(WebhookDelivery))


def enqueue_delivery(delivery: WebhookDelivery) -> None:
    """Enqueue the processing of ``delivery`` (``store_delivery``'s ``on_stored``)."""
    process_webhook_delivery.enqueue(delivery.pk)


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
