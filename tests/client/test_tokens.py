"""Saved cards in the client: a recurring token's fields read tolerantly, a saved card deleted."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import responses

from django_paycharge.client import PayChargeClient, ShapeError, parse_transaction_token
from django_paycharge.client.token_vocabulary import (
    CVV_AUTHORIZATION_NOT_COMPLETED,
    NON_SUBSCRIPTION_PAYMENT,
    RECURRING_TOKEN_DISABLED,
    TRANSACTION_TOKEN_IS_NOT_RECURRING,
    charge_refusal,
)
from django_paycharge.exceptions import InvalidParametersError
from django_paycharge.testing import FakeGateway

STORE = "11ed7d40-cfe1-e4a8-bbe4-b75fa2afa138"
TOKEN = "11ed7d40-d182-8970-bbe4-930cf7543b8c"
BASE = "https://gateway.example"

# univapay-java-sdk src/test/resources/responses/transactiontoken/get-card-cvv-auth-current.json
RECORDED: dict[str, Any] = json.loads(
    """{
  "id": "11ed7d43-2845-5740-bbe4-477a1efc2deb",
  "store_id": "11ed7d43-2726-f332-bbe4-9f453d238846",
  "email": "test@email.com", "payment_type": "card", "active": true, "mode": "test",
  "type": "recurring", "ip_address": null, "usage_limit": null, "confirmed": null,
  "metadata": {}, "created_on": "2022-12-16T13:11:31.026624Z", "last_used_on": null,
  "data": {
    "card": {"cardholder": "TEST USER", "exp_month": 12, "exp_year": 2099,
             "card_bin": "492948", "last_four": "9504", "brand": "visa"},
    "billing": {"line1": "Mita", "line2": null, "country": "JP", "zip": "123-3210"},
    "cvv_authorize": {"enabled": true, "status": "current",
                      "charge_id": "11ed7d43-284a-afe2-bbe4-f7e019497fb1",
                      "credentials_id": null, "currency": "JPY"},
    "cvv_authorize_check": {"status": null, "charge_id": null, "date": null}
  }
}"""
)


def test_a_recorded_recurring_token_is_read() -> None:
    token = parse_transaction_token(RECORDED)
    assert (token.type, token.active, token.usage_limit, token.last_used_on) == (
        "recurring",
        True,
        None,
        None,
    )
    assert token.cvv_authorize is not None
    assert (token.cvv_authorize.enabled, token.cvv_authorize.status) == (True, "current")
    assert token.cvv_authorize.charge_id == uuid.UUID("11ed7d43-284a-afe2-bbe4-f7e019497fb1")
    assert token.raw is RECORDED
    assert token.card is not None
    assert (token.card.brand, token.card.last_four, token.card.exp_month, token.card.exp_year) == (
        "visa",
        "9504",
        12,
        2099,
    )


@pytest.mark.parametrize(
    "odd",
    [
        {"active": "yes", "usage_limit": 7, "last_used_on": "soon", "previous_id": "x"},
        {"data": "not an object"},
        {"data": {"cvv_authorize": ["enabled"], "card": "visa"}},
        {"data": {"card": {"last_four": 4242, "exp_month": "twelve"}}},
        {"data": {"cvv_authorize": {"enabled": "maybe", "status": 3, "charge_id": 1}}},
        {"type": None, "usage_limit": None, "active": None},
    ],
)
def test_every_field_but_id_may_be_odd(odd: dict[str, Any]) -> None:
    token = parse_transaction_token({"id": TOKEN, **odd})
    assert token.id == uuid.UUID(TOKEN)
    assert token.previous_id is None and token.last_used_on is None
    if token.cvv_authorize is not None:
        assert token.cvv_authorize.enabled is None and token.cvv_authorize.charge_id is None


def test_recurring_fields_are_typed() -> None:
    token = parse_transaction_token(
        {
            "id": TOKEN,
            "usage_limit": "monthly",
            "active": "false",
            "previous_id": STORE,
            "last_used_on": "2030-01-02T03:04:05Z",
        }
    )
    assert (token.usage_limit, token.active, token.previous_id) == (
        "monthly",
        False,
        uuid.UUID(STORE),
    )
    assert token.last_used_on == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_a_token_without_an_id_is_refused() -> None:
    with pytest.raises(ShapeError):
        parse_transaction_token({"type": "recurring"})


def test_delete_a_saved_card() -> None:
    with responses.RequestsMock() as rsps, PayChargeClient(base_url=BASE, secret="s", jwt="j") as c:
        rsps.delete(f"{BASE}/stores/{STORE}/tokens/{TOKEN}", status=204)
        c.tokens.delete(STORE, TOKEN)
        assert len(rsps.calls) == 1
        with pytest.raises(InvalidParametersError):
            c.tokens.delete(STORE, "not-a-uuid")


@pytest.mark.parametrize(
    ("known", "merchant", "code"),
    [
        ({"token_type": "subscription"}, True, NON_SUBSCRIPTION_PAYMENT),
        ({"token_type": "one_time"}, True, TRANSACTION_TOKEN_IS_NOT_RECURRING),
        ({"token_type": "one_time"}, False, None),
        ({"token_type": "recurring", "active": False}, True, RECURRING_TOKEN_DISABLED),
        (
            {"token_type": "recurring", "cvv_enabled": True, "cvv_status": "pending"},
            True,
            CVV_AUTHORIZATION_NOT_COMPLETED,
        ),
        ({"token_type": "recurring", "cvv_enabled": True, "cvv_status": "current"}, True, None),
        ({"token_type": "recurring", "cvv_enabled": True, "cvv_status": None}, True, None),
        ({"token_type": None}, True, None),
        ({"token_type": "a_new_type"}, True, None),
    ],
)
def test_what_a_token_refuses_a_charge(known: dict[str, Any], merchant: bool, code: str | None):
    assert charge_refusal(**known, merchant_charge=merchant) == code


def test_the_fakes_token_is_read() -> None:
    fake = FakeGateway()
    fake.require_cvv_authorization()
    body = fake.create_transaction_token(type="recurring", usage_limit="daily")
    token = parse_transaction_token(body)
    assert (token.type, token.usage_limit, token.active) == ("recurring", "daily", True)
    assert token.cvv_authorize is not None and token.cvv_authorize.status == "pending"
    assert token.card is not None and token.card.last_four == "4242"
