"""Where a stored delivery goes once committed: the shop's hand-off, a task, or inline."""

from __future__ import annotations

from collections.abc import Callable

from django.utils.module_loading import import_string

from ... import conf
from ...models import WebhookDelivery
from ...outbox import claimant
from ...queue import background_enabled, database_backend, routed
from .deliveries import process_delivery
from .drain import process_webhook_delivery, routed_drain, wake_drain


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
    stuck delivery wakes a drain task (see :mod:`.drain`) instead of getting a
    task of its own. An exception (a broker that is down) propagates; the
    delivery stays ``received`` and the periodic sweep
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
        task = routed(process_webhook_delivery)
        task.enqueue(delivery_pk, True) if retry_failed else task.enqueue(delivery_pk)
    else:
        process_delivery(delivery_pk, retry_failed=retry_failed, by=claimant("inline processing"))
