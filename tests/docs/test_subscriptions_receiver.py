"""docs/subscriptions.md run as written: its ``subscribe`` makes one subscription however
often it is called, and its order per renewal, heard from the fake gateway's renewals, again
as after a crash, late, and after a sync, makes one order per renewal.

The guide's ``shop/renewals.py`` block is run here as it is written, beside a stand-in for
its ``shop/models.py``: a ``RenewalOrder`` whose ``objects.get_or_create`` keeps orders by
their ``charge_id``, as the unique column does.
"""

from __future__ import annotations

import json
import sys
import types
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.models import Subscription
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery
from django_paycharge.signals import subscription_renewal_paid

from .project import REPO
from .snippets import snippets

pytestmark = pytest.mark.django_db


class _Orders:
    """``RenewalOrder.objects``: ``get_or_create`` by ``charge_id``."""

    def __init__(self) -> None:
        self.rows: dict[Any, dict[str, Any]] = {}

    def get_or_create(self, *, charge_id: Any, defaults: dict[str, Any]) -> tuple[Any, bool]:
        created = charge_id not in self.rows
        row = self.rows.setdefault(charge_id, dict(defaults))
        return row, created


@pytest.fixture
def orders() -> Iterator[_Orders]:
    """The guide's ``shop/renewals.py``, run as pasted (its receiver connected meanwhile)."""
    [body] = [
        s.body
        for s in snippets(REPO / "docs" / "subscriptions.md", REPO)
        if s.action == "file" and s.target == "shop/renewals.py"
    ]
    kept = _Orders()
    package = types.ModuleType("renewal_shop")
    package.__path__ = []
    models = types.ModuleType("renewal_shop.models")
    models.RenewalOrder = type("RenewalOrder", (), {"objects": kept})  # type: ignore[attr-defined]
    renewals = types.ModuleType("renewal_shop.renewals")
    renewals.__package__ = "renewal_shop"
    saved = {name: sys.modules.get(name) for name in ("renewal_shop", "renewal_shop.models")}
    sys.modules.update({"renewal_shop": package, "renewal_shop.models": models})
    try:
        exec(compile(body, "docs/subscriptions.md (shop/renewals.py)", "exec"), renewals.__dict__)
        yield kept
    finally:
        subscription_renewal_paid.disconnect(
            sender=Subscription, dispatch_uid="shop-order-per-renewal"
        )
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _webhook(event: str, subscription: Subscription) -> None:
    body = {"id": str(uuid.uuid4()), "event": event, "data": {"id": str(subscription.gateway_id)}}
    delivery, _ = store_delivery(body=json.dumps(body).encode(), headers={}, account="default")
    assert process_delivery(delivery.pk) == "processed"


def test_one_order_per_renewal_however_often_and_late_it_is_heard(
    orders: _Orders, fake_gateway: Any, django_capture_on_commit_callbacks: Any
) -> None:
    token = fake_gateway.create_transaction_token(type="subscription")["id"]
    sub = services.create_subscription(
        transaction_token_id=token, amount=1200, currency="JPY", period="monthly"
    )
    with django_capture_on_commit_callbacks(execute=True):
        _webhook("subscription_payment", sub)
    fake_gateway.move_clock(timedelta(days=32))  # April's renewal: its webhook is lost
    with django_capture_on_commit_callbacks(execute=True):
        services.sync_subscriptions()
    charges = list(Subscription.objects.get().charges())
    assert set(orders.rows) == {c.gateway_id for c in charges} and len(charges) == 2
    assert {o["amount"] for o in orders.rows.values()} == {1200}
    assert {o["subscription_id"] for o in orders.rows.values()} == {sub.gateway_id}
    # Heard again (a run again after a crash), the older renewal late, and with no
    # subscription row (a charge synced before its subscription): still two orders.
    for charge in reversed(charges):
        subscription_renewal_paid.send(
            sender=Subscription, subscription=None, charge=charge, event_id=uuid.uuid4()
        )
    with django_capture_on_commit_callbacks(execute=True):
        _webhook("subscription_payment", sub)
        services.sync_subscriptions()
    assert len(orders.rows) == 2


def test_the_guides_subscribe_makes_one_subscription_however_often_called(
    fake_gateway: Any,
) -> None:
    [body] = [
        s.body
        for s in snippets(REPO / "docs" / "subscriptions.md", REPO)
        if s.action == "file" and s.target == "shop/subscribe.py"
    ]
    shop: dict[str, Any] = {}
    exec(compile(body, "docs/subscriptions.md (shop/subscribe.py)", "exec"), shop)
    order = types.SimpleNamespace(pk=7)
    token = fake_gateway.create_transaction_token(type="subscription")["id"]
    first = shop["subscribe"](order, token)
    again = shop["subscribe"](order, token)  # a double click, a retried view
    assert first.pk == again.pk and Subscription.objects.count() == 1
    assert (first.amount, first.currency, first.period) == (1200, "JPY", "monthly")
    made = [r for r in fake_gateway.requests_log if r["method"] == "POST"]
    assert [r["path"] for r in made].count("/subscriptions") == 1
