from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import WebhookConfiguration, WebhookDelivery

pytestmark = pytest.mark.django_db

CONFIGS = reverse("admin:django_paycharge_webhookconfiguration_changelist")
CONFIG_SYNC = reverse("admin:django_paycharge_webhookconfiguration_sync")
DELIVERIES = reverse("admin:django_paycharge_webhookdelivery_changelist")
STORE = uuid.UUID("11111111-1111-4111-8111-111111111111")


def config(**fields):
    values = {
        "gateway_id": uuid.uuid4(),
        "store_id": STORE,
        "triggers": ["charge_updated", "charge_finished"],
        "url": "https://shop.example/payments/webhook/",
        "active": True,
        "auth_token_digest": "d" * 64,
        "raw": {"id": "raw"},
        "synced_at": timezone.now(),
        "updated_on": timezone.now(),
    }
    values.update(fields)
    return WebhookConfiguration.objects.create(**values)


def delivery(**fields):
    n = uuid.uuid4().hex
    values = {
        "event": "charge_finished",
        "delivery_id": n[:12],
        "dedupe_key": f"id:{n}",
        "body": json.dumps({"event": "charge_finished", "data": {"id": str(uuid.uuid4())}}),
        "headers": {"Content-Type": "application/json", "User-Agent": "gateway"},
        "received_at": timezone.now(),
        "status": "processed",
    }
    values.update(fields)
    return WebhookDelivery.objects.create(**values)


def texts(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


# -- configurations ------------------------------------------------------------------------


def test_configuration_list_and_detail_never_show_the_token(admin_client):
    item = config(url="https://shop.example/hook/")
    html = admin_client.get(CONFIGS).content.decode()
    assert "https://shop.example/hook/" in html
    assert "charge_updated, charge_finished" in html
    detail = admin_client.get(
        reverse("admin:django_paycharge_webhookconfiguration_change", args=[item.pk])
    ).content.decode()
    assert str(item.gateway_id) in detail
    for page in (html, detail):
        assert "d" * 64 not in page
        assert "auth_token" not in page


def test_a_healthy_configuration_gives_no_warning(admin_client):
    config()
    assert texts(admin_client.get(CONFIGS)) == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"active": False}, "is inactive"),
        ({"removed_at": timezone.now(), "active": False}, "was removed from the gateway"),
        ({"triggers": ["charge_updated"]}, "lacks the “charge_finished” trigger"),
    ],
)
def test_configuration_warnings(admin_client, fields, expected):
    config(url="https://shop.example/<b>hook</b>/", **fields)
    response = admin_client.get(CONFIGS)
    [warning] = texts(response)
    assert expected in warning
    assert "<b>hook" not in response.content.decode()  # messages are escaped


def test_warning_when_there_is_no_configuration(admin_client):
    [warning] = texts(admin_client.get(CONFIGS))
    assert "No webhook configuration" in warning


def test_sync_button_and_action(admin_client, fake_gateway):
    fake_gateway.add_webhook("https://shop.example/a/")
    response = admin_client.post(CONFIG_SYNC, follow=True)
    assert any("1 read, 1 new" in m for m in texts(response))
    item = WebhookConfiguration.objects.get()
    assert item.auth_token_digest == services.token_digest("test-webhook-token")
    fake_gateway.add_webhook("https://shop.example/b/", triggers=["charge_updated"])
    response = admin_client.post(
        CONFIGS, {"action": "sync_from_gateway", "_selected_action": [item.pk]}, follow=True
    )
    assert any("2 read, 1 new" in m for m in texts(response))
    assert "lacks the" in response.content.decode()  # the new one misses charge_finished


def test_webhook_sync_needs_its_permission(client, staff_user):
    item = config()
    client.force_login(staff_user("view_webhookconfiguration", "call_gateway"))
    html = client.get(CONFIGS).content.decode()
    assert "sync_from_gateway" not in html and "Sync from gateway" not in html
    assert client.post(CONFIG_SYNC).status_code == 403
    client.post(CONFIGS, {"action": "sync_from_gateway", "_selected_action": [item.pk]})
    client.force_login(staff_user("view_webhookconfiguration", "call_gateway_webhooks"))
    assert "sync_from_gateway" in client.get(CONFIGS).content.decode()


def test_configurations_are_read_only(admin_client):
    item = config()
    change = reverse("admin:django_paycharge_webhookconfiguration_change", args=[item.pk])
    assert admin_client.post(change, {"url": "https://evil.example/"}).status_code == 403
    assert (
        admin_client.get(reverse("admin:django_paycharge_webhookconfiguration_add")).status_code
        == 403
    )


# -- deliveries ----------------------------------------------------------------------------


def test_delivery_log_filters(admin_client):
    finished = delivery(event="charge_finished", status="failed")
    updated = delivery(event="charge_updated", status="processed")
    old = delivery(event="charge_updated", received_at=timezone.now() - timedelta(days=60))

    def listed(params):
        response = admin_client.get(DELIVERIES, params)
        assert response.status_code == 200
        return {d.pk for d in response.context["cl"].result_list}

    assert listed({}) == {finished.pk, updated.pk, old.pk}
    assert listed({"event": "charge_finished"}) == {finished.pk}
    assert listed({"status__exact": "processed"}) == {updated.pk, old.pk}
    since = (timezone.now() - timedelta(days=7)).isoformat()
    assert listed({"received_at__gte": since}) == {finished.pk, updated.pk}


def test_delivery_detail_pretty_prints_and_escapes(admin_client):
    evil = "<script>alert(1)</script>"
    item = delivery(
        body=json.dumps({"event": "charge_finished", "data": {"note": evil}}),
        headers={"X-Evil": evil, "Content-Type": "application/json"},
        last_error=evil,
    )
    html = admin_client.get(
        reverse("admin:django_paycharge_webhookdelivery_change", args=[item.pk])
    ).content.decode()
    assert evil not in html
    assert "&quot;event&quot;: &quot;charge_finished&quot;" in html
    assert "X-Evil" in html
    assert 'name="_save"' not in html


def test_non_json_body_is_shown_as_received(admin_client):
    item = delivery(body="not json <at all>")
    html = admin_client.get(
        reverse("admin:django_paycharge_webhookdelivery_change", args=[item.pk])
    ).content.decode()
    assert "not json &lt;at all&gt;" in html


def test_reprocess_a_failed_delivery(admin_client, fake_gateway, gateway_charge):
    charge = gateway_charge("konbini")
    fake_gateway.complete(str(charge.gateway_id))
    body = {
        "event": "charge_finished",
        "data": {"id": str(charge.gateway_id), "store_id": str(charge.store_id)},
    }
    failed = delivery(body=json.dumps(body), status="failed", last_error="earlier")
    broken = delivery(body="{}", status="failed")
    response = admin_client.post(
        DELIVERIES,
        {"action": "reprocess", "_selected_action": [failed.pk, broken.pk]},
        follow=True,
    )
    messages = texts(response)
    assert f"Delivery {failed} was reprocessed: Processed." in messages
    assert f"Delivery {broken} was reprocessed: Ignored (unknown event)." in messages
    failed.refresh_from_db()
    assert failed.status == "processed" and failed.charge_id == charge.pk
    charge.refresh_from_db()
    assert charge.status == "successful"


def test_reprocess_reports_failures(admin_client, fake_gateway):
    body = {"event": "charge_finished", "data": {"id": str(uuid.uuid4()), "store_id": str(STORE)}}
    item = delivery(body=json.dumps(body), status="failed")
    response = admin_client.post(
        DELIVERIES, {"action": "reprocess", "_selected_action": [item.pk]}, follow=True
    )
    [message] = texts(response)
    assert message.startswith(f"Delivery {item} was reprocessed and failed: ")
    assert "does not know the charge" in message


def test_reprocess_needs_its_permission(client, staff_user):
    item = delivery(status="failed")
    client.force_login(staff_user("view_webhookdelivery", "call_gateway"))
    assert "reprocess" not in client.get(DELIVERIES).content.decode()
    client.post(DELIVERIES, {"action": "reprocess", "_selected_action": [item.pk]})
    item.refresh_from_db()
    assert item.status == "failed" and item.attempts == 0
    client.force_login(staff_user("view_webhookdelivery", "reprocess_webhookdelivery"))
    assert 'value="reprocess"' in client.get(DELIVERIES).content.decode()


# -- leases: stuck deliveries, told truthfully ---------------------------------------------


def _claimed(*, expired):
    now = timezone.now()
    start = now - timedelta(minutes=10) if expired else now
    return delivery(
        status="processing", attempts=1, claimed_at=start,
        lease_until=start + timedelta(minutes=5),
        claimed_by="drain_webhook_deliveries task (web-1 pid 4242)",
        body=json.dumps({"event": "a_later_event", "data": {}}),
    )  # fmt: skip


def test_stuck_and_live_claims_are_shown_as_they_are(admin_client):
    dead, alive = _claimed(expired=True), _claimed(expired=False)
    response = admin_client.get(DELIVERIES)
    assert texts(response) == [
        "1 delivery is stuck: the process that claimed it died or hangs. The next worker or "
        "paycharge_process_webhooks run takes it over."
    ]
    listing = response.content.decode()
    assert listing.count("Stuck: its worker died") == 1
    assert listing.count("Processing (lease until") == 1
    detail = admin_client.get(
        reverse("admin:django_paycharge_webhookdelivery_change", args=[dead.pk])
    ).content.decode()
    assert "Stuck: its worker died" in detail and "web-1 pid 4242" in detail

    def listed(params):
        return {d.pk for d in admin_client.get(DELIVERIES, params).context["cl"].result_list}

    assert listed({"status__exact": "stuck"}) == {dead.pk}
    assert listed({"status__exact": "processing"}) == {alive.pk}


def test_reprocess_tells_a_live_claim_apart_and_leaves_it(admin_client):
    alive = _claimed(expired=False)
    response = admin_client.post(
        DELIVERIES, {"action": "reprocess", "_selected_action": [alive.pk]}, follow=True
    )
    [message] = texts(response)
    assert message.startswith(f"Delivery {alive} was not reprocessed: drain_webhook_deliveries")
    assert [m.level_tag for m in get_messages(response.wsgi_request)] == ["warning"]
    alive.refresh_from_db()
    assert (alive.status, alive.attempts) == ("processing", 1)


def test_reprocess_takes_over_a_stuck_delivery_and_says_so(admin_client, fake_gateway):
    dead = _claimed(expired=True)
    response = admin_client.post(
        DELIVERIES, {"action": "reprocess", "_selected_action": [dead.pk]}, follow=True
    )
    [message] = texts(response)
    assert message == (
        f"Delivery {dead} was stuck (its worker died); taken over and reprocessed: "
        "Ignored (unknown event)."
    )
    dead.refresh_from_db()
    assert (dead.status, dead.attempts) == ("ignored", 2)
    assert dead.claimed_by.startswith("admin Reprocess by admin")
