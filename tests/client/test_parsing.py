"""Typed results: every field parsed to the right type, unknowns kept, secrets dropped."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import responses

from django_paycharge.client import (
    Charge,
    ChargeError,
    IssuerToken,
    PayChargeClient,
    TransactionToken,
    WebhookConfiguration,
)

from .conftest import (
    ACCOUNT_NUMBER,
    BASE,
    CHARGE,
    MERCHANT,
    STORE,
    TOKEN,
    WEBHOOK,
    charge_json,
)

GET_URL = f"{BASE}/stores/{STORE}/charges/{CHARGE}"


def vars_of(obj: object) -> dict[str, object]:
    """Every attribute of a slotted dataclass."""
    return {name: getattr(obj, name) for name in obj.__slots__}  # type: ignore[attr-defined]


def _retrieve_raw(client: PayChargeClient, rsps: responses.RequestsMock, body: str) -> Charge:
    rsps.get(GET_URL, body=body, content_type="application/json")
    return client.charges.retrieve(STORE, CHARGE)


def test_every_charge_field_typed(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    body = charge_json(
        subscription_id="77777777-7777-4777-8777-777777777777",
        charged_amount=1000,
        charged_currency="USD",
        charged_amount_formatted=10,
        fee_amount=36,
        fee_currency="USD",
        fee_amount_formatted=0.36,
        capture_at="2024-05-07T00:00:00+09:00",
        descriptor="SHOP",
        descriptor_phone_number="0312345678",
        status="successful",
        error={"code": 306, "message": "card declined", "detail": None},
        three_ds={"redirect_endpoint": "https://shop.example/3ds", "mode": "require"},
    )
    rsps.get(GET_URL, json=body)
    charge = client.charges.retrieve(STORE, CHARGE)
    assert charge.id == uuid.UUID(CHARGE)
    assert charge.store_id == uuid.UUID(STORE)
    assert charge.transaction_token_id == uuid.UUID(TOKEN)
    assert charge.subscription_id == uuid.UUID("77777777-7777-4777-8777-777777777777")
    assert charge.transaction_token_type == "one_time"
    assert charge.merchant_transaction_id == "order-42"
    assert charge.requested_amount == 1000 and type(charge.requested_amount) is int
    assert charge.requested_currency == "USD"
    assert charge.requested_amount_formatted == Decimal("10.0")
    assert type(charge.requested_amount_formatted) is Decimal
    assert charge.charged_amount == 1000 and type(charge.charged_amount) is int
    assert charge.charged_currency == "USD"
    assert type(charge.charged_amount_formatted) is Decimal
    assert charge.charged_amount_formatted == Decimal(10)
    assert charge.fee_amount == 36
    assert charge.fee_currency == "USD"
    assert charge.fee_amount_formatted == Decimal("0.36")  # exact, not float 0.36
    assert charge.only_direct_currency is False
    assert charge.capture_at == datetime(2024, 5, 6, 15, 0, tzinfo=UTC)
    assert charge.capture_at.utcoffset() == timedelta(hours=9)
    assert charge.descriptor == "SHOP"
    assert charge.descriptor_phone_number == "0312345678"
    assert charge.status == "successful"
    assert charge.error == ChargeError(code=306, message="card declined", detail=None, raw={})
    assert charge.error is not None and charge.error.raw["code"] == 306
    assert charge.metadata == {"order": "42"}
    assert charge.mode == "test"
    assert charge.created_on == datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert charge.created_on.tzinfo is not None
    assert charge.redirect is not None
    assert charge.redirect.endpoint == "https://shop.example/return?x=1"
    assert charge.redirect.redirect_id == uuid.UUID("66666666-6666-4666-8666-666666666666")
    assert charge.merchant_name == "Shop"
    assert charge.store_name == "Main store"
    assert charge.three_ds is not None
    assert charge.three_ds.mode == "require"
    assert charge.three_ds.redirect_endpoint == "https://shop.example/3ds"
    assert charge.raw["id"] == CHARGE
    assert charge.raw["fee_amount_formatted"] == Decimal("0.36")


def test_no_float_anywhere(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    charge = _retrieve_raw(
        client,
        rsps,
        json.dumps(charge_json(fee_amount_formatted=0.1, metadata={"rate": 1.1})),
    )

    def floats(value: object) -> list[object]:
        if isinstance(value, float):
            return [value]
        if isinstance(value, dict):
            return [f for v in value.values() for f in floats(v)]
        if isinstance(value, list):
            return [f for v in value for f in floats(v)]
        return []

    assert floats(charge.raw) == []
    assert charge.metadata == {"rate": Decimal("1.1")}


def test_whole_decimal_amount_becomes_int(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    charge = _retrieve_raw(client, rsps, json.dumps(charge_json(requested_amount=1000.0)))
    assert charge.requested_amount == 1000
    assert type(charge.requested_amount) is int


def test_unknown_values_and_fields_kept(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    body = charge_json(status="partially_refunded", mode="sandbox", brand_new={"x": [1]})
    rsps.get(GET_URL, json=body)
    charge = client.charges.retrieve(STORE, CHARGE)
    assert charge.status == "partially_refunded"
    assert charge.mode == "sandbox"
    assert charge.raw["brand_new"] == {"x": [1]}
    assert not hasattr(charge, "brand_new")


def test_missing_and_null_fields_become_none(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.get(GET_URL, json={"id": CHARGE, "status": "pending", "redirect": None, "error": None})
    charge = client.charges.retrieve(STORE, CHARGE)
    assert charge.status == "pending"
    assert charge.store_id is None
    assert charge.requested_amount is None
    assert charge.requested_amount_formatted is None
    assert charge.created_on is None
    assert charge.redirect is None
    assert charge.error is None
    assert charge.three_ds is None
    assert charge.metadata is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-06T07:08:09Z", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("2024-05-06T07:08:09.1Z", datetime(2024, 5, 6, 7, 8, 9, 100000, tzinfo=UTC)),
        ("2024-05-06T07:08:09.123456789Z", datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)),
        ("2024-05-06T16:08:09+09:00", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("2024-05-06T07:08:09", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),  # UTC per spec
    ],
)
def test_times_are_aware(
    client: PayChargeClient, rsps: responses.RequestsMock, text: str, expected: datetime
) -> None:
    rsps.get(GET_URL, json=charge_json(created_on=text))
    created = client.charges.retrieve(STORE, CHARGE).created_on
    assert created == expected
    assert created is not None and created.tzinfo is not None


def test_created_charge_is_pending(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    charge = client.charges.create(transaction_token_id=TOKEN, amount=1000, currency="USD")
    assert charge.status == "pending"
    assert charge.charged_amount is None
    assert charge.fee_amount is None


def test_bank_transfer_issuer_token(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    body = {
        "payment_type": "bank_transfer",
        "account_id": "acc-1",
        "branch_code": "123",
        "branch_name": "Main",
        "account_holder_name": "SHOP KK",
        "account_number": ACCOUNT_NUMBER,
        "new_field": 1,
    }
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}/issuer_token", json=body)
    token = client.issuer_tokens.retrieve(STORE, CHARGE)
    assert isinstance(token, IssuerToken)
    assert token.payment_type == "bank_transfer"
    assert token.account_number == ACCOUNT_NUMBER
    assert token.branch_code == "123"
    assert token.issuer_token is None
    assert token.raw["new_field"] == 1
    assert ACCOUNT_NUMBER not in repr(token)
    assert ACCOUNT_NUMBER not in str(token)
    assert "***2" in repr(token) or ACCOUNT_NUMBER[-4:] in repr(token)


def test_online_issuer_token(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    body = {
        "payment_type": "online",
        "issuer_token": "https://provider.example/pay?t=1",
        "payload": {"a": "b"},
        "call_method": "holo_projector",
    }
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}/issuer_token", json=body)
    token = client.issuer_tokens.retrieve(STORE, CHARGE)
    assert token.call_method == "holo_projector"
    assert token.payload == {"a": "b"}
    assert token.account_number is None
    assert "account_number=None" in repr(token)


def test_webhook_auth_token_dropped(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    body = {
        "id": WEBHOOK,
        "platform_id": "88888888-8888-4888-8888-888888888888",
        "merchant_id": MERCHANT,
        "store_id": STORE,
        "triggers": ["charge_finished", "refund_finished"],
        "url": "https://shop.example/hook",
        "active": True,
        "auth_token": "whsec-do-not-keep",
        "is_integration": False,
        "created_on": "2024-01-01T00:00:00Z",
        "updated_on": "2024-01-02T00:00:00+00:00",
    }
    rsps.get(f"{BASE}/merchants/{MERCHANT}/stores/{STORE}/webhooks/{WEBHOOK}", json=body)
    hook = client.webhooks.retrieve(STORE, WEBHOOK, merchant_id=MERCHANT)
    assert isinstance(hook, WebhookConfiguration)
    assert hook.id == uuid.UUID(WEBHOOK)
    assert hook.merchant_id == uuid.UUID(MERCHANT)
    assert hook.triggers == ("charge_finished", "refund_finished")
    assert hook.active is True
    assert hook.is_integration is False
    assert hook.updated_on == datetime(2024, 1, 2, tzinfo=UTC)
    assert "auth_token" not in hook.raw
    assert not hasattr(hook, "auth_token")
    assert hook.auth_token_sha256 == hashlib.sha256(b"whsec-do-not-keep").hexdigest()
    assert "whsec-do-not-keep" not in str(vars_of(hook))
    assert "whsec-do-not-keep" not in repr(hook)
    assert "whsec-do-not-keep" not in repr(hook.raw)


def test_webhook_create_sends_token_once(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(
        f"{BASE}/stores/{STORE}/webhooks",
        json={"id": WEBHOOK, "triggers": ["charge_finished"], "auth_token": "whsec-new"},
        status=201,
    )
    hook = client.webhooks.create(
        STORE,
        url="https://shop.example/hook",
        triggers=("charge_finished",),
        auth_token="whsec-new",
    )
    sent_body = rsps.calls[0].request.body
    assert sent_body is not None
    sent = json.loads(sent_body)
    assert sent == {
        "url": "https://shop.example/hook",
        "triggers": ["charge_finished"],
        "auth_token": "whsec-new",
        "active": True,
    }
    assert "whsec-new" not in repr(hook) + repr(hook.raw) + str(vars_of(hook))
    missing = {"id": WEBHOOK, "triggers": []}
    rsps.replace(responses.POST, f"{BASE}/stores/{STORE}/webhooks", json=missing, status=201)
    hook = client.webhooks.create(STORE, url="https://a.example/", triggers=["x"], auth_token="t")
    assert hook.auth_token_sha256 is None


def test_transaction_token(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    body = {
        "id": TOKEN,
        "store_id": STORE,
        "payment_type": "online",
        "type": "one_time",
        "mode": "test",
        "email": "buyer@example.com",
        "metadata": {},
        "data": {"brand": "some_wallet", "call_method": "http_get"},
        "created_on": "2024-01-01T00:00:00.5+09:00",
        "usage_limit": None,
    }
    rsps.get(f"{BASE}/stores/{STORE}/tokens/{TOKEN}", json=body)
    token = client.tokens.retrieve(STORE, uuid.UUID(TOKEN))
    assert isinstance(token, TransactionToken)
    assert token.id == uuid.UUID(TOKEN)
    assert token.payment_type == "online"
    assert token.data == {"brand": "some_wallet", "call_method": "http_get"}
    assert token.created_on == datetime(
        2024, 1, 1, 0, 0, 0, 500000, tzinfo=timezone(timedelta(hours=9))
    )
    assert "usage_limit" in token.raw


def test_results_are_frozen(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.get(GET_URL, json=charge_json())
    charge = client.charges.retrieve(STORE, CHARGE)
    with pytest.raises(AttributeError):
        charge.status = "successful"  # type: ignore[misc]
