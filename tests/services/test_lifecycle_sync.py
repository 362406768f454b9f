"""Refunds and cancels reach the mirror from webhooks and from the sync, never from the body."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import call_command

from django_paycharge import services
from django_paycharge.models import Cancel, Charge, Refund, WebhookDelivery

pytestmark = pytest.mark.django_db

TOKEN = "whk-lifecycle-sync-token-0123"
URL = "/payments/webhook/"


@pytest.fixture
def hooked(fake_gateway, settings, client):
    """The fake's refund and cancel webhooks reach the app's view through the test client."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway.add_webhook(
        "https://shop.example" + URL,
        triggers=["refund_finished", "cancel_finished", "charge_updated"],
        auth_token=TOKEN,
    )
    fake_gateway.deliver_with_django_client(client)
    return fake_gateway


def paid_charge(gateway, **fields):
    token = gateway.create_transaction_token("card")["id"]
    return services.create_charge(transaction_token_id=token, amount=1000, currency="JPY", **fields)


def refund_on_gateway(gateway, charge, amount):
    """A refund made outside the app (the gateway's dashboard, another system)."""
    path = f"/stores/{charge.store_id}/charges/{charge.gateway_id}/refunds"
    answer = gateway.request("POST", path, {"amount": amount, "currency": "JPY"})
    assert answer.status == 201
    return answer.json()


def test_a_refund_finished_webhook_mirrors_a_refund_made_elsewhere(hooked):
    charge = paid_charge(hooked)
    remote = refund_on_gateway(hooked, charge, 300)
    refund = Refund.objects.get()
    assert refund.gateway_id == uuid.UUID(remote["id"])
    assert (refund.status, refund.amount, refund.charge_id) == ("successful", 300, charge.pk)
    delivery = WebhookDelivery.objects.get(event="refund_finished")
    assert delivery.status == "processed" and delivery.charge_id == charge.pk
    assert charge.refunded_amount == 300


def test_the_body_of_a_refund_delivery_is_never_trusted(fake_gateway, settings, client):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    charge = paid_charge(fake_gateway)
    remote = refund_on_gateway(fake_gateway, charge, 300)
    lie = {**remote, "status": "failed", "amount": 999_999}
    body = {"id": str(uuid.uuid4()), "event": "refund_finished", "data": lie}
    answer = client.post(
        URL, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=TOKEN
    )
    assert answer.status_code == 200
    refund = Refund.objects.get()
    assert (refund.status, refund.amount) == ("successful", 300)  # the gateway's, re-read


def test_a_delivery_naming_an_unknown_refund_fails_and_is_kept(fake_gateway, settings, client):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    charge = paid_charge(fake_gateway)
    data = {"id": str(uuid.uuid4()), "charge_id": str(charge.gateway_id)}
    body = {"id": str(uuid.uuid4()), "event": "refund_finished", "data": data}
    client.post(URL, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=TOKEN)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "does not know" in delivery.last_error
    assert Refund.objects.count() == 0
    bad = {"id": str(uuid.uuid4()), "event": "cancel_finished", "data": {"id": "x"}}
    client.post(URL, json.dumps(bad), content_type="application/json", HTTP_AUTHORIZATION=TOKEN)
    assert WebhookDelivery.objects.get(event="cancel_finished").status == "failed"


def test_a_refund_webhook_for_a_charge_not_yet_mirrored_mirrors_it_first(hooked):
    charge_json = hooked.create_charge()  # created outside the app
    path = f"/stores/{charge_json['store_id']}/charges/{charge_json['id']}/refunds"
    assert hooked.request("POST", path, {"amount": 100, "currency": "JPY"}).status == 201
    refund = Refund.objects.get()
    assert refund.charge.gateway_id == uuid.UUID(charge_json["id"])
    assert refund.charge.status == "successful"


def test_a_cancel_webhook_cancels_the_mirror(hooked):
    charge = paid_charge(hooked, capture=False)
    path = f"/stores/{charge.store_id}/charges/{charge.gateway_id}/cancels"
    assert hooked.request("POST", path, None).status == 201
    cancel = Cancel.objects.get()
    assert cancel.status == "successful" and cancel.charge_id == charge.pk
    assert Charge.objects.get(pk=charge.pk).status == "canceled"


def test_the_service_and_the_webhook_store_one_refund_in_either_order(hooked):
    charge = paid_charge(hooked)
    # Webhook first: the gateway finishes before answering.
    first = services.refund_charge(charge, amount=100)
    # Webhook after: the refund stays pending until the gateway finishes it later.
    hooked.processing_delay = 60
    second = services.refund_charge(charge, amount=200)
    assert second.status == "pending"
    hooked.state.finish_refund(str(second.gateway_id))
    assert Refund.objects.count() == 2 == len(hooked.state.refunds)
    assert set(Refund.objects.values_list("status", flat=True)) == {"successful"}
    assert {first.pk, second.pk} == set(Refund.objects.values_list("pk", flat=True))
    assert WebhookDelivery.objects.filter(event="refund_finished", status="processed").count() == 2


def test_sync_refunds_reads_each_charges_refunds_and_cancels(fake_gateway):
    paid = paid_charge(fake_gateway)
    for amount in (100, 200, 300):
        refund_on_gateway(fake_gateway, paid, amount)
    authorized = paid_charge(fake_gateway, capture=False)
    path = f"/stores/{authorized.store_id}/charges/{authorized.gateway_id}/cancels"
    assert fake_gateway.request("POST", path, None).status == 201
    paid_charge(fake_gateway, capture=False)  # authorized, nothing to find
    services.sync_charges()  # the mirror learns the charges' statuses first
    counts = services.sync_refunds()
    assert counts == {"charges": 3, "refunds": 3, "cancels": 1, "failed": 0, "quarantined": 0,
                      "quarantined_new": 0, "quarantined_retriable": 0}  # fmt: skip
    assert list(Refund.objects.order_by("amount").values_list("amount", flat=True)) == [
        100,
        200,
        300,
    ]
    assert Cancel.objects.get().charge_id == authorized.pk
    assert services.sync_refunds() == counts  # again: nothing new, nothing doubled
    assert Refund.objects.count() == 3


def test_paycharge_sync_refunds_option(fake_gateway, capsys):
    paid = paid_charge(fake_gateway)
    refund_on_gateway(fake_gateway, paid, 100)
    call_command("paycharge_sync", "--refunds")
    out = capsys.readouterr().out
    summary = "Refunds and cancels: 1 charges read, 1 refunds, 0 cancels, 0 failed, 0 quarantined."
    assert summary in out
    assert Refund.objects.count() == 1
