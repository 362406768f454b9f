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
from typing import Any

from django.conf import settings
from django.utils import timezone

from . import conf, services
from .exceptions import ConfigurationError
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


def _process_webhook_delivery(delivery_pk: int, retry_failed: bool = False) -> str:
    status = deliveries.process_delivery(delivery_pk, retry_failed=retry_failed)
    if status == "failed":
        _retry_later(delivery_pk)
    return status


def _sync_charges(account: str | None = None) -> dict[str, int]:
    return services.sync_charges(account).as_dict()


if _task is not None:
    process_webhook_delivery: Any = _task()(_process_webhook_delivery)
    sync_charges_task: Any = _task()(_sync_charges)
else:  # pragma: no cover - only without any tasks framework installed
    process_webhook_delivery = None
    sync_charges_task = None


def background_enabled() -> bool:
    mode = conf.get_setting("TASKS")
    if mode == "inline":
        return False
    available = _task is not None and bool(getattr(settings, "TASKS", None))
    if mode == "background" and not available:
        raise ConfigurationError(
            "PAYCHARGE['TASKS'] is 'background' but no task backend is configured: set TASKS "
            "(and install django-tasks on Django 5.2)."
        )
    return available


def dispatch_delivery(delivery_pk: int) -> None:
    """Process a stored delivery in the background, or inline when there is no backend."""
    if background_enabled():
        process_webhook_delivery.enqueue(delivery_pk)
    else:
        deliveries.process_delivery(delivery_pk)


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
