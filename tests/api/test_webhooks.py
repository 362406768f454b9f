from __future__ import annotations

import pytest

from django_paycharge import services

from .conftest import API, assert_error

pytestmark = pytest.mark.django_db
TOKEN = "very-secret-webhook-token"


@pytest.fixture
def config(gateway):
    remote = gateway.add_webhook("https://shop.example/payments/webhook/", auth_token=TOKEN)
    services.sync_webhooks()
    return remote


def test_staff_list_configurations_without_their_token(staff, config):
    response = staff.get(f"{API}/webhooks/")
    assert response.status_code == 200
    body = response.json()
    assert body["has_more"] is False
    [item] = body["items"]
    assert item["id"] == config["id"]
    assert item["url"] == "https://shop.example/payments/webhook/"
    assert item["triggers"] == ["charge_updated", "charge_finished"]
    text = response.content.decode()
    assert TOKEN not in text
    assert services.token_digest(TOKEN) not in text
    assert "auth_token" not in text and "raw" not in item


def test_staff_retrieve_one(staff, config):
    response = staff.get(f"{API}/webhooks/{config['id']}/")
    assert response.status_code == 200
    assert response.json()["active"] is True
    assert TOKEN not in response.content.decode()


@pytest.mark.parametrize("webhook_id", ["6b0c6a3c-3b7e-4a8e-9a57-000000000000", "x"])
def test_unknown_configuration_is_404(staff, webhook_id):
    assert_error(staff.get(f"{API}/webhooks/{webhook_id}/"), 404, "not_found")


@pytest.mark.parametrize(
    ("who", "code"), [("anon", "not_authenticated"), ("customer", "permission_denied")]
)
def test_only_staff_may_read_them(request, config, who, code):
    client = request.getfixturevalue(who)
    assert_error(client.get(f"{API}/webhooks/"), 403, code)
    assert_error(client.get(f"{API}/webhooks/{config['id']}/"), 403, code)


def test_they_are_read_only(staff, config):
    assert_error(staff.post(f"{API}/webhooks/", {}, format="json"), 405, "method_not_allowed")
    response = staff.delete(f"{API}/webhooks/{config['id']}/")
    assert_error(response, 405, "method_not_allowed")
