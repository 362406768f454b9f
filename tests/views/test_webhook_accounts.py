"""Accounts kept apart: each account's webhook URL accepts its own tokens only."""

from __future__ import annotations

import base64
import json
import logging
import uuid

import pytest
from django.core.checks import run_checks
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import Charge, WebhookConfiguration, WebhookDelivery

pytestmark = pytest.mark.django_db

DEFAULT_TOKEN = "whk-default-0123456789abcdef"
TOKYO_TOKEN = "whk-tokyo-0123456789abcdef"
OSAKA_TOKEN = "whk-osaka-0123456789abcdef"
TOKYO_STORE = "33333333-3333-4333-8333-333333333333"


def _jwt(subject: str) -> str:
    def part(value: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256'})}.{part({'sub': subject})}.c2ln"


TOKYO = {"SECRET": "tokyo-secret", "JWT": _jwt("tokyo"), "STORE_ID": TOKYO_STORE}


@pytest.fixture
def accounts(settings, fake_gateway):
    fake_gateway.add_app_token(TOKYO["SECRET"], TOKYO["JWT"], store_id=TOKYO_STORE)
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": [DEFAULT_TOKEN],
        "ACCOUNTS": {
            "tokyo": {**TOKYO, "WEBHOOK_AUTH_TOKENS": [TOKYO_TOKEN]},
            "osaka": {**TOKYO, "WEBHOOK_AUTH_TOKENS": [OSAKA_TOKEN]},
        },
    }
    return fake_gateway


def post(client, url, token, body=None):
    body = body or {"id": str(uuid.uuid4()), "event": "a_later_event", "data": {}}
    return client.post(
        url, data=json.dumps(body), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip


URLS = {
    "default": "/payments/webhook/",
    "tokyo": "/payments/webhook/tokyo/",
    "osaka": "/payments/webhook/osaka/",
}
TOKENS = {"default": DEFAULT_TOKEN, "tokyo": TOKYO_TOKEN, "osaka": OSAKA_TOKEN}


@pytest.mark.parametrize("at", sorted(URLS))
@pytest.mark.parametrize("of", sorted(TOKENS))
def test_a_token_opens_its_own_account_only(accounts, client, at, of):
    response = post(client, URLS[at], TOKENS[of])
    if at == of:
        assert response.status_code == 200
        assert WebhookDelivery.objects.get().account == at
    else:
        assert response.status_code == 401
        assert not WebhookDelivery.objects.exists()


def test_a_synced_configurations_token_opens_its_own_account_only(accounts, client):
    WebhookConfiguration.objects.create(
        gateway_id=uuid.uuid4(),
        account="tokyo",
        url="https://shop.example/payments/webhook/tokyo/",
        auth_token_digest=services.token_digest("synced-tokyo-token"),
        synced_at=timezone.now(),
    )
    assert post(client, URLS["tokyo"], "synced-tokyo-token").status_code == 200
    assert post(client, URLS["default"], "synced-tokyo-token").status_code == 401
    assert post(client, URLS["osaka"], "synced-tokyo-token").status_code == 401
    assert list(WebhookDelivery.objects.values_list("account", flat=True)) == ["tokyo"]


def test_the_dedupe_key_includes_the_account(accounts, client):
    body = {"id": "same-delivery-id", "event": "a_later_event", "data": {}}
    assert post(client, URLS["tokyo"], TOKYO_TOKEN, body).json()["duplicate"] is False
    assert post(client, URLS["osaka"], OSAKA_TOKEN, body).json()["duplicate"] is False
    assert post(client, URLS["tokyo"], TOKYO_TOKEN, body).json()["duplicate"] is True
    no_id = {"event": "a_later_event", "data": {"n": 1}}
    assert post(client, URLS["tokyo"], TOKYO_TOKEN, no_id).json()["duplicate"] is False
    assert post(client, URLS["osaka"], OSAKA_TOKEN, no_id).json()["duplicate"] is False
    assert sorted(WebhookDelivery.objects.values_list("account", flat=True)) == [
        "osaka", "osaka", "tokyo", "tokyo",
    ]  # fmt: skip


def test_a_named_account_without_tokens_of_its_own_falls_back_with_a_warning(
    accounts, client, settings, caplog
):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ACCOUNTS": {**settings.PAYCHARGE["ACCOUNTS"], "tokyo": TOKYO},  # no WEBHOOK_AUTH_TOKENS
    }
    warnings = [m for m in run_checks() if m.id == "django_paycharge.W004"]
    assert len(warnings) == 1 and "'tokyo'" in warnings[0].msg
    with caplog.at_level(logging.WARNING, logger="django_paycharge.webhooks"):
        assert post(client, URLS["tokyo"], DEFAULT_TOKEN).status_code == 200  # as before upgrading
    assert "deprecated" in caplog.text
    assert post(client, URLS["osaka"], DEFAULT_TOKEN).status_code == 401  # osaka has its own

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ACCOUNTS": {
            **settings.PAYCHARGE["ACCOUNTS"],
            "tokyo": {**TOKYO, "WEBHOOK_AUTH_TOKENS": []},
        },
    }
    assert not [m for m in run_checks() if m.id == "django_paycharge.W004"]
    assert post(client, URLS["tokyo"], DEFAULT_TOKEN).status_code == 401


def test_malformed_tokens_answer_503_and_the_check_names_the_key(accounts, client, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ACCOUNTS": {"tokyo": {**TOKYO, "WEBHOOK_AUTH_TOKENS": "not-a-list"}},
    }
    # Never a 4xx or 500 to a delivery because of our own configuration.
    assert post(client, URLS["tokyo"], "not-a-list").status_code == 503
    errors = [m for m in run_checks() if m.id == "django_paycharge.E008"]
    assert [m.msg for m in errors] == [
        "PAYCHARGE['ACCOUNTS']['tokyo']['WEBHOOK_AUTH_TOKENS'] must be a list of non-empty strings."
    ]
    assert post(client, URLS["default"], DEFAULT_TOKEN).status_code == 200  # others unaffected


def test_the_fake_gateways_deliveries_reach_each_account_and_are_processed(accounts, client):
    gateway = accounts
    gateway.add_webhook(
        "https://shop.example/payments/webhook/tokyo/", auth_token=TOKYO_TOKEN,
        store_id=TOKYO_STORE,
    )  # fmt: skip
    gateway.add_webhook("https://shop.example/payments/webhook/", auth_token=DEFAULT_TOKEN)
    gateway.deliver_with_django_client(client)
    token = gateway.create_transaction_token("bank_transfer", store_id=TOKYO_STORE)["id"]
    charge = services.create_charge(
        transaction_token_id=token, amount=700, currency="JPY", account="tokyo"
    )
    gateway.complete(str(charge.gateway_id))
    delivered = [d for d in gateway.deliveries if d.event == "charge_finished"]
    assert [d.state for d in delivered] == ["delivered"]  # only the tokyo store's configuration
    stored = WebhookDelivery.objects.get(event="charge_finished")
    assert (stored.account, stored.status) == ("tokyo", "processed")
    assert Charge.objects.get(pk=charge.pk).status == "successful"
