from __future__ import annotations

import json
import threading
import uuid

import pytest
from django.db import connection
from django.test import Client

from django_paycharge import services, signals
from django_paycharge.models import Charge, WebhookDelivery

pytestmark = pytest.mark.django_db

TOKEN = "whk_test_token_0123456789abcdef"
URL = "/payments/webhook/"


@pytest.fixture
def hook(fake_gateway, settings, client):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    return client


def post(client, body, token=TOKEN, **extra):
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return client.post(URL, data=data, content_type="application/json", **headers, **extra)


def charge_event(charge_json, event="charge_finished", delivery_id=None):
    body = {"event": event, "created_on": "2026-11-22T00:00:00Z", "data": charge_json}
    if delivery_id is not False:
        body["id"] = delivery_id or str(uuid.uuid4())
    return body


@pytest.fixture
def konbini_charge(fake_gateway):
    token = fake_gateway.create_transaction_token("konbini")["id"]
    return services.create_charge(transaction_token_id=token, amount=900, currency="JPY")


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer ",
        "Bearer wrong-token",
        f"Bearer {TOKEN[:-1]}",  # a prefix of the right token
        f"Bearer {TOKEN.upper()}",  # other case
        f"Bearer {TOKEN}x",  # other length
        f"Basic {TOKEN}",
    ],
)
def test_unauthenticated_requests_get_401_and_nothing_is_stored(hook, header):
    extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    response = hook.post(URL, data="{}", content_type="application/json", **extra)
    assert response.status_code == 401
    assert WebhookDelivery.objects.count() == 0


def test_bare_token_and_bearer_token_are_both_accepted(hook, konbini_charge):
    body = charge_event(konbini_charge.raw)
    assert (
        hook.post(
            URL, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=TOKEN
        ).status_code
        == 200
    )
    body2 = charge_event(konbini_charge.raw)
    assert post(hook, body2).status_code == 200
    assert WebhookDelivery.objects.count() == 2


def test_tokens_of_synced_webhook_configurations_are_accepted(fake_gateway, client):
    fake_gateway.add_webhook("https://shop.example/payments/webhook/", auth_token="cfg-token-1")
    services.sync_webhooks()
    response = post(client, {"event": "a_later_event", "data": {}}, token="cfg-token-1")
    assert response.status_code == 200
    assert post(client, {"event": "x"}, token="cfg-token-2").status_code == 401


def test_only_post_is_allowed(hook):
    assert hook.get(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


def test_a_delivery_is_stored_without_the_authorization_header_and_processed(
    hook, fake_gateway, konbini_charge, django_capture_on_commit_callbacks
):
    fake_gateway.complete(str(konbini_charge.gateway_id))
    received = []
    signals.webhook_received.connect(lambda **kw: received.append(kw["delivery"].pk), weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = post(hook, charge_event(konbini_charge.raw))
    finally:
        signals.webhook_received.receivers.clear()
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert received == [delivery.pk]
    assert delivery.status == "processed"
    assert delivery.charge_id == konbini_charge.pk
    assert "Authorization" not in delivery.headers
    assert TOKEN not in json.dumps(delivery.headers)
    assert Charge.objects.get(pk=konbini_charge.pk).status == "successful"


def test_the_body_state_is_never_trusted(hook, konbini_charge):
    lie = dict(konbini_charge.raw, status="successful")
    assert post(hook, charge_event(lie)).status_code == 200
    assert Charge.objects.get(pk=konbini_charge.pk).status == "awaiting"


def test_five_sequential_repeats_are_stored_and_processed_once(hook, konbini_charge):
    body = charge_event(konbini_charge.raw)
    statuses = [post(hook, body).status_code for _ in range(5)]
    assert statuses == [200] * 5
    delivery = WebhookDelivery.objects.get()
    assert delivery.attempts == 1


def test_repeats_without_a_delivery_id_are_deduplicated_on_the_body(hook, konbini_charge):
    body = charge_event(konbini_charge.raw, delivery_id=False)
    assert [post(hook, body).status_code for _ in range(3)] == [200] * 3
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="concurrent writers: PostgreSQL pass"
)
def test_five_parallel_repeats_are_stored_and_processed_once(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    token = fake_gateway.create_transaction_token("konbini")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=900, currency="JPY")
    body = charge_event(charge.raw)
    codes, barrier = [], threading.Barrier(5)

    def send():
        barrier.wait()
        try:
            codes.append(post(Client(), body).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [200] * 5
    assert WebhookDelivery.objects.count() == 1
    assert WebhookDelivery.objects.get().attempts == 1


def test_a_stale_delivery_after_a_newer_one_keeps_the_newer_state(
    hook, fake_gateway, konbini_charge
):
    old_body = charge_event(dict(konbini_charge.raw), event="charge_updated")
    fake_gateway.complete(str(konbini_charge.gateway_id))
    assert post(hook, charge_event(konbini_charge.raw)).status_code == 200
    assert Charge.objects.get(pk=konbini_charge.pk).status == "successful"
    assert post(hook, old_body).status_code == 200
    assert Charge.objects.get(pk=konbini_charge.pk).status == "successful"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (b'{"event": "charge_finished", "data": "nope"}', "application/json"),
        (b'{"event": "charge_finished", "data": {"id": "not-a-uuid"}}', "application/json"),
        (b"event=charge_finished", "application/x-www-form-urlencoded"),
        ("\u00ff\u00fe".encode("latin-1"), "text/plain"),
    ],
)
def test_malformed_bodies_are_stored_as_failed_and_acknowledged(hook, body, content_type):
    response = hook.post(
        URL, data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert delivery.last_error


def test_a_huge_body_is_stored_truncated_as_failed(hook, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_MAX_BODY_BYTES": 4096}
    body = json.dumps({"event": "charge_finished", "pad": "x" * 100_000})
    response = post(hook, body)
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert len(delivery.body) == 4096
    assert "WEBHOOK_MAX_BODY_BYTES" in delivery.last_error


def test_unknown_events_are_recorded_and_ignored(hook):
    assert post(hook, {"id": "d-1", "event": "a_later_event", "data": {}}).status_code == 200
    assert WebhookDelivery.objects.get().status == "ignored"


def test_a_subscription_event_without_its_id_is_recorded_as_failed(hook):
    assert post(hook, {"id": "d-1", "event": "subscription_created", "data": {}}).status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "subscription id" in delivery.last_error


def test_processing_failure_is_acknowledged_recorded_and_reprocessed(
    hook, fake_gateway, konbini_charge
):
    from django.core.management import call_command

    fake_gateway.add_fault("GET", r"/charges/", action="status", status=503, count=10)
    assert post(hook, charge_event(konbini_charge.raw)).status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert "ServerError" in delivery.last_error
    fake_gateway.clear_faults()
    fake_gateway.complete(str(konbini_charge.gateway_id))
    call_command("paycharge_process_webhooks", "--failed")
    delivery.refresh_from_db()
    assert delivery.status == "processed"
    assert delivery.attempts == 2
    assert Charge.objects.get(pk=konbini_charge.pk).status == "successful"


def test_a_database_failure_while_storing_answers_503(hook, monkeypatch):
    from django.db import DatabaseError

    from django_paycharge.views import webhooks

    def broken(**kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(webhooks, "store_delivery", broken)
    assert post(hook, {"id": "x", "event": "charge_finished"}).status_code == 503


def test_prune_deletes_only_old_deliveries(hook):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    post(hook, {"id": "old", "event": "x"})
    post(hook, {"id": "new", "event": "x"})
    WebhookDelivery.objects.filter(delivery_id="old").update(
        received_at=timezone.now() - timedelta(days=40)
    )
    call_command("paycharge_prune_webhooks", "--older-than", "30")
    assert list(WebhookDelivery.objects.values_list("delivery_id", flat=True)) == ["new"]


def test_deliveries_from_the_fake_gateway_are_processed(fake_gateway, client, settings):
    fake_gateway.add_webhook(
        "http://testserver/payments/webhook/",
        triggers=["charge_updated", "charge_finished"],
        auth_token=TOKEN,
    )
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway.deliver_with_django_client(client)
    token = fake_gateway.create_transaction_token("bank_transfer")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=900, currency="JPY")
    fake_gateway.complete(str(charge.gateway_id))
    assert Charge.objects.get(pk=charge.pk).status == "successful"
    assert WebhookDelivery.objects.filter(status="processed").count() >= 1
