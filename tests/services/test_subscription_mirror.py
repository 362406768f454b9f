"""The subscription mirror: one writer, statuses never backwards, stale events ignored."""

from __future__ import annotations

import json
import uuid
from datetime import date
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.client import parse_subscription
from django_paycharge.client.subscription_parsing import parse_scheduled_payment
from django_paycharge.client.types import Rejected
from django_paycharge.models import (
    QuarantinedItem,
    ScheduledPayment,
    Subscription,
    WebhookDelivery,
)
from django_paycharge.services.mirror import (
    store_scheduled_payment,
    store_scheduled_payments,
    store_subscription,
)
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery

pytestmark = pytest.mark.django_db

SUB = "11efe2d1-b782-1358-b3e0-d7b500e13963"
PAYMENT = "11efe2d1-b7aa-47b0-b3e2-ff60b09e411c"


def body(status: str, updated_on: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": SUB,
        "status": status,
        "amount": 1000,
        "currency": "JPY",
        "period": "monthly",
        "updated_on": updated_on,
        **fields,
    }


def store(status: str, updated_on: str, **fields: Any) -> Subscription:
    return store_subscription(
        parse_subscription(body(status, updated_on, **fields)), account="default"
    )


def test_running_statuses_move_by_time_final_ones_never_move() -> None:
    store("current", "2025-01-01T00:00:00Z")
    assert store("suspended", "2025-01-02T00:00:00Z").status == "suspended"
    stale = store("current", "2025-01-01T12:00:00Z")  # a late event of the day before
    assert stale.status == "suspended"
    assert store("unpaid", "2025-01-03T00:00:00Z").status == "unpaid"  # resumed
    assert store("canceled", "2025-01-04T00:00:00Z").status == "canceled"
    assert store("current", "2025-02-01T00:00:00Z").status == "canceled"  # final stays
    row = Subscription.objects.get()
    assert (row.status, row.status_rank, row.raw["status"]) == ("canceled", 3, "canceled")


def test_every_field_kept_odd_values_unknown() -> None:
    row = store(
        "current",
        "2025-01-01T00:00:00Z",
        amount=2**70,
        status_reason="x" * 10,
        descriptor="d" * 300,
        subscription_plan={"plan_type": "fixed_cycles", "fixed_cycles": 3},
        schedule_settings={"zone_id": "Asia/Tokyo", "termination_mode": "immediate"},
        next_payment={"id": PAYMENT, "due_date": "2025-02-01", "amount": 1000, "is_paid": False},
    )
    assert row.amount is None and row.descriptor is None  # too big for their columns
    assert row.raw["amount"] == 2**70 and row.raw["status_reason"] == "x" * 10
    assert row.subscription_plan == {"plan_type": "fixed_cycles", "fixed_cycles": 3}
    assert row.next_payment_date == date(2025, 2, 1)
    payment = ScheduledPayment.objects.get()
    assert (payment.subscription_id, payment.amount, payment.is_paid) == (row.pk, 1000, False)


def test_a_paid_payment_never_becomes_unpaid_and_unreadable_ones_are_quarantined() -> None:
    sub = store("current", "2025-01-01T00:00:00Z")
    paid = {"id": PAYMENT, "is_paid": True, "updated_on": "2025-01-02T00:00:00Z"}
    store_scheduled_payment(parse_scheduled_payment(paid), subscription=sub)
    late = {**paid, "is_paid": False, "updated_on": "2025-01-03T00:00:00Z"}
    assert store_scheduled_payment(parse_scheduled_payment(late), subscription=sub).is_paid
    store_scheduled_payments(sub, [], [Rejected(raw={"due_date": "x"}, reason="no id")])
    item = QuarantinedItem.objects.get()
    assert (item.resource, json.loads(item.payload)) == ("scheduled_payment", {"due_date": "x"})


def test_charges_linked_and_webhooks_update_the_mirror(fake_gateway) -> None:
    token = fake_gateway.create_transaction_token(type="subscription")["id"]
    client = services.get_client()
    created = client.subscriptions.create(
        transaction_token_id=token, amount=1000, currency="JPY", period="monthly"
    )
    event = {
        "id": str(uuid.uuid4()),
        "event": "subscription_payment",
        "data": {"id": str(created.id)},
    }
    delivery, _ = store_delivery(body=json.dumps(event).encode(), headers={}, account="default")
    assert process_delivery(delivery.pk) == "processed"
    row = Subscription.objects.get(gateway_id=created.id)
    assert row.status == "current"  # read again from the gateway: the body named only the id
    assert row.store_id is not None
    [remote_charge] = client.subscriptions.charges(row.store_id, created.id)
    # The renewal's charge came with the payment event, and the delivery links it.
    assert [c.gateway_id for c in row.charges()] == [remote_charge.id]
    assert WebhookDelivery.objects.get(pk=delivery.pk).charge == row.charges().get()
    client.subscriptions.suspend(row.store_id, created.id)
    again = {**event, "id": str(uuid.uuid4()), "event": "subscription_suspended"}
    delivery, _ = store_delivery(body=json.dumps(again).encode(), headers={}, account="default")
    assert process_delivery(delivery.pk) == "processed"
    assert Subscription.objects.get().status == "suspended"
    # A repeat of the first event, processed late: the gateway is read, the mirror stays.
    assert process_delivery(delivery.pk, force=True) == "processed"
    assert Subscription.objects.get().status == "suspended"
