"""The fake's saved cards: recurring tokens charged by the merchant, their usage limit, CVV
authorization, read/update/delete/renew routes and the token events."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from django_paycharge.client.token_vocabulary import (
    CVV_AUTHORIZATION_NOT_COMPLETED,
    NON_SUBSCRIPTION_PAYMENT,
    RECURRING_TOKEN_DISABLED,
    RECURRING_USAGE_REQUIRES_CVV,
    USAGE_LIMIT_NOT_APPLICABLE,
    USAGE_LIMIT_REACHED,
)
from django_paycharge.testing import CARD_DECLINED, TEST_STORE_ID, TEST_WIDGET_JWT, FakeGateway

TOKENS = f"/stores/{TEST_STORE_ID}/tokens"


@pytest.fixture
def fake() -> FakeGateway:
    gateway = FakeGateway()
    gateway.add_webhook(
        "https://shop.example/hook",
        triggers=[
            "token_created",
            "token_updated",
            "token_replaced",
            "token_cvv_auth_updated",
            "recurring_token_deleted",
        ],
    )
    gateway.set_transport(lambda url, headers, body: 200)
    return gateway


def charge(fake: FakeGateway, token_id: str, amount: int = 1000) -> tuple[int, dict[str, Any]]:
    body = {"transaction_token_id": token_id, "amount": amount, "currency": "JPY"}
    answer = fake.request("POST", "/charges", body)
    return answer.status, answer.json()


def events(fake: FakeGateway) -> list[str]:
    return [d.event for d in fake.deliveries]


def test_a_recurring_token_is_charged_again_and_again(fake):
    token = fake.create_transaction_token(type="recurring")
    assert token["type"] == "recurring" and token["usage_limit"] is None
    statuses = [charge(fake, token["id"]) for _ in range(3)]
    assert [status for status, _ in statuses] == [201, 201, 201]
    assert {body["transaction_token_type"] for _, body in statuses} == {"recurring"}
    assert fake.request("GET", f"{TOKENS}/{token['id']}").json()["last_used_on"] is not None


def test_the_usage_limit_refuses_a_second_charge_within_its_period(fake):
    token = fake.create_transaction_token(type="recurring", usage_limit="weekly")["id"]
    assert charge(fake, token)[0] == 201
    status, body = charge(fake, token)
    assert (status, body["code"]) == (400, USAGE_LIMIT_REACHED)
    fake.move_clock(dt.timedelta(days=6))
    assert charge(fake, token)[1]["code"] == USAGE_LIMIT_REACHED
    fake.move_clock(dt.timedelta(days=1))
    assert charge(fake, token)[0] == 201


def test_a_usage_limit_is_for_recurring_tokens_only(fake):
    body = {
        "payment_type": "card",
        "type": "one_time",
        "usage_limit": "daily",
        "data": {"card_number": "4242424242424242", "exp_month": 12, "exp_year": 2099},
    }
    answer = fake.request("POST", "/tokens", body)
    assert answer.status == 400
    assert {"field": "usage_limit", "reason": USAGE_LIMIT_NOT_APPLICABLE} in answer.json()["errors"]


def test_a_subscription_token_is_not_charged_directly(fake):
    token = fake.create_transaction_token(type="subscription")["id"]
    assert charge(fake, token)[1]["code"] == NON_SUBSCRIPTION_PAYMENT


def test_cvv_authorization_before_the_first_charge_when_the_store_requires_it(fake):
    fake.processing_delay = 60.0  # the authorization waits: the token stays pending
    fake.require_cvv_authorization()
    token = fake.create_transaction_token(type="recurring")
    assert token["data"]["cvv_authorize"]["status"] == "pending"
    assert charge(fake, token["id"])[1]["code"] == CVV_AUTHORIZATION_NOT_COMPLETED
    fake.processing_delay = 0.0
    fake.state.authorize_cvv(token["id"])
    read = fake.request("GET", f"{TOKENS}/{token['id']}").json()
    assert read["data"]["cvv_authorize"]["status"] == "current"
    assert charge(fake, token["id"])[0] == 201
    assert events(fake) == ["token_created", "token_cvv_auth_updated"]


def test_a_declined_card_fails_its_cvv_authorization_and_a_new_cvv_tries_again(fake):
    fake.require_cvv_authorization()
    token = fake.create_transaction_token(type="recurring", card_number=CARD_DECLINED)["id"]
    read = fake.request("GET", f"{TOKENS}/{token}").json()
    assert read["data"]["cvv_authorize"]["status"] == "failed"
    assert charge(fake, token)[1]["code"] == CVV_AUTHORIZATION_NOT_COMPLETED
    fake.set_cvv_authorization(token, "current")
    patched = fake.request("PATCH", f"{TOKENS}/{token}", {"data": {"cvv": "123"}})
    assert patched.json()["data"]["cvv_authorize"]["status"] == "pending"
    assert "token_updated" in events(fake)


def test_no_cvv_authorization_unless_the_store_requires_it(fake):
    token = fake.create_transaction_token(type="recurring")
    assert token["data"]["cvv_authorize"] == {
        "enabled": False,
        "status": None,
        "charge_id": None,
        "credentials_id": None,
        "currency": None,
    }
    assert charge(fake, token["id"])[0] == 201


def test_update_delete_and_list(fake):
    token = fake.create_transaction_token(type="recurring")["id"]
    fake.create_transaction_token()
    patched = fake.request(
        "PATCH", f"{TOKENS}/{token}", {"email": "new@example.com", "metadata": {"customer": "7"}}
    )
    assert (patched.status, patched.json()["email"]) == (200, "new@example.com")
    listed = fake.request("GET", f"{TOKENS}?type=recurring").json()
    assert [t["id"] for t in listed["items"]] == [token]
    assert fake.request("DELETE", f"{TOKENS}/{token}").status == 204
    assert fake.request("GET", f"{TOKENS}/{token}").json()["active"] is False
    assert charge(fake, token)[1]["code"] == RECURRING_TOKEN_DISABLED
    assert events(fake)[-2:] == ["token_updated", "recurring_token_deleted"]
    fake.request("DELETE", f"{TOKENS}/{token}")  # again: no second event
    assert events(fake).count("recurring_token_deleted") == 1


def test_a_renewed_token_replaces_the_old_one(fake):
    old = fake.create_transaction_token(type="recurring", usage_limit="monthly")["id"]
    answer = fake.request(
        "POST", f"{TOKENS}/{old}/renew", {"data": {"exp_month": 1, "exp_year": 2100}}
    )
    new = answer.json()
    assert (answer.status, new["previous_id"], new["usage_limit"]) == (200, old, "monthly")
    assert (new["data"]["exp_month"], new["data"]["exp_year"]) == (1, 2100)
    assert fake.request("GET", f"{TOKENS}/{old}").json()["active"] is False
    assert charge(fake, new["id"])[0] == 201
    replaced = [d for d in fake.deliveries if d.event == "token_replaced"]
    assert [d.payload["data"]["id"] for d in replaced] == [new["id"]]


def test_tokens_of_another_store_are_not_found(fake):
    fake.add_store("44444444-4444-4444-8444-444444444444")
    token = fake.create_transaction_token(
        type="recurring", store_id="44444444-4444-4444-8444-444444444444"
    )["id"]
    assert fake.request("DELETE", f"{TOKENS}/{token}").status == 404


def test_a_store_that_asks_the_cvv_again_for_each_recurring_charge(fake):
    fake.require_cvv_confirmation()
    token = fake.create_transaction_token(type="recurring")["id"]
    assert charge(fake, token)[1]["code"] == RECURRING_USAGE_REQUIRES_CVV
    browser = {"Authorization": f"Bearer {TEST_WIDGET_JWT}"}
    cvv = fake.request("PATCH", f"{TOKENS}/{token}", {"data": {"cvv": "123"}}, headers=browser)
    assert cvv.status == 200
    assert charge(fake, token)[0] == 201
    assert charge(fake, token)[1]["code"] == RECURRING_USAGE_REQUIRES_CVV  # used up
    other = {"email": "x@example.com"}
    refused = fake.request("PATCH", f"{TOKENS}/{token}", other, headers=browser)
    assert (refused.status, refused.json()["code"]) == (403, "INVALID_PERMISSIONS")
    assert fake.request("PATCH", f"{TOKENS}/{token}", other).status == 200  # with the secret
    assert charge(fake, fake.create_transaction_token()["id"])[0] == 201  # one-time: not asked
