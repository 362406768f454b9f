"""A shop's app in the queue tests' workers: its receiver is connected where every process
loads it (AppConfig.ready), as docs/signals.md says."""

from __future__ import annotations

from django.apps import AppConfig


class QueueShopConfig(AppConfig):
    name = "tests.queues.shop"
    label = "queue_shop"

    def ready(self) -> None:
        from django_paycharge import signals
        from django_paycharge.models import Charge

        from .receivers import mark_paid

        signals.charge_status_changed.connect(mark_paid, sender=Charge, dispatch_uid="queue-shop")
