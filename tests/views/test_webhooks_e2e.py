"""A charge completed on the fake gateway server reaches the shop by real HTTP webhook."""

from __future__ import annotations

import pytest

from django_paycharge import services
from django_paycharge.models import Charge, WebhookDelivery
from tests.waiting import wait_deliveries, wait_until

TOKEN = "whk-e2e-token-0123456789"


@pytest.mark.django_db(transaction=True)
def test_real_http_delivery_updates_the_mirror(fake_gateway_server, live_server, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway_server.add_webhook(
        f"{live_server.url}/payments/webhook/",
        triggers=["charge_updated", "charge_finished"],
        auth_token=TOKEN,
    )
    token = fake_gateway_server.create_transaction_token("bank_transfer")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=3000, currency="JPY")
    fake_gateway_server.complete(str(charge.gateway_id))
    wait_deliveries(fake_gateway_server)
    wait_until(
        lambda: Charge.objects.get(pk=charge.pk).status == "successful",
        "the webhook to mark the charge successful",
        diagnose=lambda: str(list(WebhookDelivery.objects.values("status", "last_error"))),
    )
    assert Charge.objects.get(pk=charge.pk).status == "successful"
    assert WebhookDelivery.objects.filter(status="processed", charge=charge).exists()
    assert all(
        "authorization" not in {k.lower() for k in d.headers} for d in WebhookDelivery.objects.all()
    )
