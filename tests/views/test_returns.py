from __future__ import annotations

import json
import uuid

import pytest

from django_paycharge import services, signals
from django_paycharge.models import Charge, WebhookDelivery

pytestmark = pytest.mark.django_db

URL = "/payments/return/"


@pytest.fixture
def online_charge(fake_gateway):
    token = fake_gateway.create_transaction_token("online", brand="paypay", call_method="http_post")
    return services.create_charge(
        transaction_token_id=token["id"],
        amount=1200,
        currency="JPY",
        redirect_endpoint="https://testserver/payments/return/?order=7",
        metadata={"order": "7"},
    )


def query(charge, **extra):
    params = {
        "serviceChargeId": str(charge.gateway_id),
        "serviceTokenId": str(charge.transaction_token_id),
        **extra,
    }
    return params


def test_return_refreshes_the_charge_and_redirects_to_the_configured_url(
    client, fake_gateway, online_charge, settings, django_capture_on_commit_callbacks
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "RETURN_URL": "/orders/?charge={charge_id}"}
    fake_gateway.complete(str(online_charge.gateway_id))
    returned = []
    signals.charge_returned.connect(lambda **kw: returned.append(kw["charge"].pk), weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get(URL, query(online_charge, order="7"))
    finally:
        signals.charge_returned.receivers.clear()
    assert response.status_code == 302
    assert response["Location"] == f"/orders/?charge={online_charge.gateway_id}"
    assert returned == [online_charge.pk]
    assert Charge.objects.get(pk=online_charge.pk).status == "successful"


def test_nothing_but_the_charge_id_is_trusted(client, fake_gateway, online_charge):
    response = client.get(URL, query(online_charge, status="successful", amount="1"))
    assert response.status_code == 302
    assert Charge.objects.get(pk=online_charge.pk).status == "awaiting"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"serviceChargeId": "not-a-uuid"},
        {"serviceChargeId": str(uuid.uuid4())},
    ],
)
def test_unknown_charge_ids_give_404(client, fake_gateway, params):
    assert client.get(URL, params).status_code == 404


def test_a_token_id_that_does_not_match_gives_404(client, fake_gateway, online_charge):
    response = client.get(URL, query(online_charge, serviceTokenId=str(uuid.uuid4())))
    assert response.status_code == 404


def test_a_charge_the_gateway_does_not_know_gives_404(client, fake_gateway, online_charge):
    fake_gateway.reset()
    assert client.get(URL, query(online_charge)).status_code == 404


def test_gateway_down_gives_a_friendly_retry_page(client, fake_gateway, online_charge, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    fake_gateway.add_fault("GET", r"/charges/", action="status", status=503, count=5)
    response = client.get(URL, query(online_charge))
    assert response.status_code == 503
    assert b"try again" in response.content.lower()


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/",
        "/\\evil.example/",
        "https://evil.example/",
        "javascript:alert(1)",
        "http://testserver.evil.example/",
        "\\\\evil.example",
    ],
)
def test_off_site_return_urls_fall_back_to_the_safe_default(
    client, fake_gateway, online_charge, settings, target
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "RETURN_URL": target}
    response = client.get(URL, query(online_charge, next=target))
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_a_hook_chooses_the_next_url(client, fake_gateway, online_charge, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "RETURN_URL_HOOK": lambda request, charge: f"/thanks/{charge.metadata['order']}/",
    }
    response = client.get(URL, query(online_charge))
    assert response["Location"] == "/thanks/7/"


def test_the_query_never_chooses_the_next_url(client, fake_gateway, online_charge):
    response = client.get(URL, query(online_charge, next="/admin/", return_to="/admin/"))
    assert response["Location"] == "/"


@pytest.mark.parametrize("order", ["return_first", "webhook_first"])
def test_return_and_webhook_in_either_order_end_in_one_row_and_one_change(
    client, fake_gateway, online_charge, settings, order, django_capture_on_commit_callbacks
):
    token = "whk-return-order"
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [token]}
    changes = []

    def on_change(**kw):
        changes.append((kw["previous_status"], kw["status"]))

    fake_gateway.complete(str(online_charge.gateway_id))
    body = json.dumps(
        {
            "id": "d1",
            "event": "charge_finished",
            "data": fake_gateway.charges[str(online_charge.gateway_id)],
        }
    )
    signals.charge_status_changed.connect(on_change, weak=False)
    try:
        steps = [
            lambda: client.get(URL, query(online_charge)),
            lambda: client.post(
                "/payments/webhook/",
                data=body,
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {token}",
            ),
        ]
        with django_capture_on_commit_callbacks(execute=True):
            for step in steps if order == "return_first" else reversed(steps):
                assert step().status_code in (200, 302)
    finally:
        signals.charge_status_changed.disconnect(on_change)
    assert changes == [(online_charge.status, "successful")]
    assert Charge.objects.count() == 1
    assert WebhookDelivery.objects.get().status == "processed"
