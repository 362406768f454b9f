"""Background processing on real backends and real worker processes (see backends.py).

Each test posts or enqueues in this process and waits for the worker process,
which reads the fake gateway over HTTP and writes the same test database.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from django_paycharge import services, tasks
from django_paycharge.models import Charge, ChargeRequest, WebhookDelivery
from django_paycharge.queue import background_enabled, routed

from .conftest import post_delivery

pytestmark = pytest.mark.django_db(transaction=True)


def _finished_charge(gateway, amount):
    token = gateway.create_transaction_token("bank_transfer")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=amount, currency="JPY")
    gateway.complete(str(charge.gateway_id))
    return charge


def test_webhook_deliveries_are_processed_by_the_worker(queue, fake_gateway_server, client):
    assert background_enabled()
    charges = [_finished_charge(fake_gateway_server, 100 + i) for i in range(4)]
    for charge in charges:
        body = {
            "id": str(uuid.uuid4()),
            "event": "charge_finished",
            "data": fake_gateway_server.charges[str(charge.gateway_id)],
        }
        assert post_delivery(client, body).json() == {"status": "ok", "duplicate": False}
    queue.wait_for(
        lambda: WebhookDelivery.objects.filter(status="processed").count() == 4,
        "4 deliveries processed",
    )
    assert list(WebhookDelivery.objects.values_list("attempts", flat=True)) == [1, 1, 1, 1]
    assert set(Charge.objects.values_list("status", flat=True)) == {"successful"}


def test_sync_and_payment_type_fill_run_on_the_worker(queue, fake_gateway_server):
    for i in range(3):
        token = fake_gateway_server.create_transaction_token("card")["id"]
        fake_gateway_server.create_charge(token, amount=500 + i, currency="JPY")
    routed(tasks.sync_charges_task).enqueue(None)
    queue.wait_for(lambda: Charge.objects.count() == 3, "3 charges synced")
    assert set(Charge.objects.values_list("payment_type", flat=True)) == {""}
    routed(tasks.fill_payment_types_task).enqueue(None)
    queue.wait_for(
        lambda: not Charge.objects.filter(payment_type="").exists(), "payment types filled"
    )
    assert set(Charge.objects.values_list("payment_type", flat=True)) == {"card"}


def test_recovery_and_the_sweep_run_on_the_worker(queue, fake_gateway_server, settings):
    token = fake_gateway_server.create_transaction_token("card")["id"]
    request = ChargeRequest.objects.create(
        params={"transaction_token_id": token, "amount": 700, "currency": "JPY"}
    )
    ChargeRequest.objects.filter(pk=request.pk).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )
    # A delivery stored long ago whose task was lost (no task was ever queued for it).
    delivery = WebhookDelivery.objects.create(
        dedupe_key="id:lost", delivery_id="lost", event="a_later_event", body="{}",
        headers={}, account="default", received_at=timezone.now() - timedelta(hours=1),
    )  # fmt: skip
    routed(tasks.run_periodic_task).enqueue(["sweep", "recover"])
    queue.wait_for(
        lambda: (
            ChargeRequest.objects.get(pk=request.pk).state == "succeeded"
            and WebhookDelivery.objects.get(pk=delivery.pk).status == "ignored"
        ),
        "the charge request settled and the lost delivery processed",
    )
    assert len(fake_gateway_server.charges) == 1


@pytest.mark.parametrize("queue", ["celery"], indirect=True)
def test_celery_beat_entries_run_the_periodic_work(queue, tmp_path):
    # The worker of the fixture runs without beat: start it again with beat_schedule()'s entries.
    queue.stop()
    queue.env["PAYCHARGE_TEST_BEAT"] = "1"
    queue.env["PAYCHARGE_CHILD_SETTINGS"] = queue.env["PAYCHARGE_CHILD_SETTINGS"].replace(
        "}", ', "SWEEP_AFTER": 0}'
    )
    queue.beat_schedule_file = str(tmp_path / "beat-schedule")
    lost = WebhookDelivery.objects.create(
        dedupe_key="id:beat", delivery_id="beat", event="a_later_event", body="{}",
        headers={}, account="default", received_at=timezone.now(),
    )  # fmt: skip
    queue.start()
    queue.wait_for(
        lambda: WebhookDelivery.objects.get(pk=lost.pk).status == "ignored",
        "beat's sweep to send on the lost delivery",
    )
    assert "paycharge-sweep-recover" in queue.output()
