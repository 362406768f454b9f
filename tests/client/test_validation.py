"""Local checks of the spec's rules: bad input is refused, named, and nothing is sent."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from django_paycharge.client import PayChargeClient
from django_paycharge.client import validation as v
from django_paycharge.client.vocabulary import THREE_DS_MODES
from django_paycharge.exceptions import InvalidParametersError

from .conftest import BASE, CHARGE, JWT, SECRET, STORE, TOKEN, charge_json

VALID: dict[str, Any] = {"transaction_token_id": TOKEN, "amount": 1000, "currency": "JPY"}

BAD_CREATE = [
    ("transaction_token_id", "not-a-uuid", "transaction_token_id"),
    ("transaction_token_id", 12345, "transaction_token_id"),
    ("amount", 0, "amount"),
    ("amount", -5, "amount"),
    ("amount", 10.0, "amount"),
    ("amount", True, "amount"),
    ("amount", Decimal("1000"), "amount"),
    ("amount", "1000", "amount"),
    ("currency", "JP", "currency"),
    ("currency", "JPYY", "currency"),
    ("currency", "J1Y", "currency"),
    ("currency", "ÉUR", "currency"),
    # Three letters are not enough: ISO-4217 (Babel's CLDR data) must list the code.
    ("currency", "yen", "currency"),
    ("currency", "XYZ", "currency"),
    ("currency", "DEM", "currency"),  # withdrawn in 2002
    ("currency", None, "currency"),
    ("capture", "false", "capture"),
    ("capture", 0, "capture"),
    ("capture_at", datetime(2030, 1, 1, 12, 0), "capture_at"),
    ("capture_at", "2030-01-01T12:00:00", "capture_at"),
    ("capture_at", "tomorrow", "capture_at"),
    ("capture_at", 1893456000, "capture_at"),
    ("merchant_transaction_id", "", "merchant_transaction_id"),
    ("merchant_transaction_id", "   ", "merchant_transaction_id"),
    ("merchant_transaction_id", 42, "merchant_transaction_id"),
    ("merchant_transaction_id", "a\nb", "merchant_transaction_id"),
    ("ip_address", "2001:db8::1", "client_metadata.ip_address"),
    ("ip_address", "256.1.1.1", "client_metadata.ip_address"),
    ("ip_address", "10.0.0", "client_metadata.ip_address"),
    ("ip_address", 167772161, "client_metadata.ip_address"),
    ("metadata", ["a"], "metadata"),
    ("metadata", "a=b", "metadata"),
    ("metadata", {"nested": {"a": 1}}, "metadata.nested"),
    ("metadata", {"list": [1, 2]}, "metadata.list"),
    ("metadata", {"nan": math.nan}, "metadata.nan"),
    ("metadata", {"inf": Decimal("Infinity")}, "metadata.inf"),
    ("metadata", {1: "int key"}, "metadata"),
    ("metadata", {"when": datetime(2030, 1, 1, tzinfo=UTC)}, "metadata.when"),
    ("redirect_endpoint", "/relative/path", "redirect.endpoint"),
    ("redirect_endpoint", "ftp://shop.example/", "redirect.endpoint"),
    ("redirect_endpoint", "https://", "redirect.endpoint"),
    ("redirect_endpoint", "javascript:alert(1)", "redirect.endpoint"),
    ("redirect_endpoint", "https://shop.example/a b", "redirect.endpoint"),
    ("redirect_endpoint", "https://shop.example:abc/", "redirect.endpoint"),
    ("three_ds_redirect_endpoint", "shop.example/3ds", "three_ds.redirect_endpoint"),
    ("three_ds_mode", "always", "three_ds.mode"),
    ("three_ds_mode", "NORMAL", "three_ds.mode"),
    ("idempotency_key", "", "idempotency_key"),
    ("idempotency_key", "has space", "idempotency_key"),
    ("idempotency_key", "k\r\nX-Evil: 1", "idempotency_key"),
    ("idempotency_key", "x" * 256, "idempotency_key"),
]


@pytest.mark.parametrize(("arg", "value", "field"), BAD_CREATE)
def test_create_rejects_bad_input(
    client: PayChargeClient, rsps: responses.RequestsMock, arg: str, value: Any, field: str
) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    with pytest.raises(InvalidParametersError) as info:
        client.charges.create(**{**VALID, arg: value})
    assert [e.field for e in info.value.errors] == [field]
    assert field in str(info.value)
    assert info.value.errors[0].reason
    assert len(rsps.calls) == 0


def test_every_broken_field_is_listed(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    with pytest.raises(InvalidParametersError) as info:
        client.charges.create(
            transaction_token_id="x",
            amount=0,
            currency="y3n",
            ip_address="::1",
            three_ds_mode="maybe",
            redirect_endpoint="nope",
            idempotency_key=" ",
        )
    fields = {e.field for e in info.value.errors}
    assert fields == {
        "transaction_token_id",
        "amount",
        "currency",
        "client_metadata.ip_address",
        "three_ds.mode",
        "redirect.endpoint",
        "idempotency_key",
    }
    assert len(rsps.calls) == 0


@pytest.mark.parametrize("mode", sorted(THREE_DS_MODES))
def test_every_three_ds_mode_accepted(
    client: PayChargeClient, rsps: responses.RequestsMock, mode: str
) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    client.charges.create(**VALID, three_ds_mode=mode)
    assert len(rsps.calls) == 1


def test_accepted_edge_values(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    client.charges.create(
        transaction_token_id=TOKEN.upper(),
        amount=1,
        currency="eur",
        capture_at=datetime(2030, 1, 1, tzinfo=UTC),
        merchant_transaction_id="x" * 64,  # no local 32-character brand limit
        ip_address="0.0.0.0",
        metadata={"a": "s", "b": 1, "c": 1.5, "d": Decimal("10.01"), "e": True, "f": None},
        redirect_endpoint="http://localhost:8000/return",
        three_ds_redirect_endpoint="https://shop.example/3ds?order=1&x=%20",
        idempotency_key=uuid.uuid4(),
    )
    assert len(rsps.calls) == 1
    body = rsps.calls[0].request.body
    assert isinstance(body, bytes)
    assert b'"d":"10.01"' in body
    assert b'"capture_at":"2030-01-01T00:00:00+00:00"' in body
    assert b'"currency":"EUR"' in body
    assert TOKEN.encode() in body


BAD_LIST = [
    ({"limit": 9}, "limit"),
    ({"limit": 101}, "limit"),
    ({"limit": True}, "limit"),
    ({"limit": 50.0}, "limit"),
    ({"limit": "50"}, "limit"),
    ({"cursor_direction": "up"}, "cursor_direction"),
    ({"cursor_direction": "ASC"}, "cursor_direction"),
    ({"cursor": "../../admin"}, "cursor"),
    ({"store_id": "abc"}, "store_id"),
    ({"from_": datetime(2024, 1, 1)}, "from"),
    ({"to": "2024-01-01"}, "to"),
    ({"amount_from": -1}, "amount_from"),
    ({"currency": "dollars"}, "currency"),
    ({"transaction_token_id": "nope"}, "transaction_token_id"),
    ({"unknown_filter": {"a": 1}}, "unknown_filter"),
    ({"from_": datetime(2024, 1, 1, tzinfo=UTC), "from": "2024-01-01T00:00:00Z"}, "from"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD_LIST)
def test_list_rejects_bad_input_before_iterating(
    client: PayChargeClient, rsps: responses.RequestsMock, kwargs: dict[str, Any], field: str
) -> None:
    rsps.get(f"{BASE}/charges", json={"items": [], "has_more": False})
    with pytest.raises(InvalidParametersError) as info:
        client.charges.list(**kwargs)  # raises at the call, not at the first next()
    assert field in {e.field for e in info.value.errors}
    with pytest.raises(InvalidParametersError):
        client.charges.list_page(**kwargs)
    assert len(rsps.calls) == 0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.charges.retrieve("x", CHARGE), "store_id"),
        (lambda c: c.charges.retrieve(STORE, "a/b"), "charge_id"),
        (lambda c: c.charges.retrieve(STORE, CHARGE, polling="yes"), "polling"),
        (lambda c: c.issuer_tokens.retrieve(STORE, "x"), "charge_id"),
        (lambda c: c.tokens.retrieve(STORE, "x"), "token_id"),
        (lambda c: c.webhooks.retrieve(STORE, "x"), "webhook_id"),
        (lambda c: c.webhooks.retrieve(STORE, CHARGE, merchant_id="m"), "merchant_id"),
        (lambda c: c.webhooks.list("x"), "store_id"),
        (lambda c: c.webhooks.list(STORE, limit=5), "limit"),
        (lambda c: c.webhooks.list_page(STORE, cursor_direction="sideways"), "cursor_direction"),
        (
            lambda c: c.webhooks.create(STORE, url="nope", triggers=["x"], auth_token="t"),
            "url",
        ),
        (
            lambda c: c.webhooks.create(STORE, url="https://a.b/", triggers=[], auth_token="t"),
            "triggers",
        ),
        (
            lambda c: c.webhooks.create(STORE, url="https://a.b/", triggers="x", auth_token="t"),
            "triggers",
        ),
        (
            lambda c: c.webhooks.create(STORE, url="https://a.b/", triggers=["x"], auth_token=""),
            "auth_token",
        ),
    ],
)
def test_other_calls_reject_bad_input(
    client: PayChargeClient, rsps: responses.RequestsMock, call: Any, field: str
) -> None:
    with pytest.raises(InvalidParametersError) as info:
        call(client)
    assert field in {e.field for e in info.value.errors}
    assert field in str(info.value)
    assert len(rsps.calls) == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base_url": "gw.example"}, "base_url"),
        ({"secret": ""}, "secret"),
        ({"secret": "has space"}, "secret"),
        ({"jwt": "a.b\nc"}, "jwt"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": (1, 2, 3)}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": True}, "max_retries"),
        ({"backoff_base": math.inf}, "backoff_base"),
        ({"pool_size": 0}, "pool_size"),
    ],
)
def test_client_options_checked(kwargs: dict[str, Any], field: str) -> None:
    options: dict[str, Any] = {"base_url": BASE, "secret": SECRET, "jwt": JWT, **kwargs}
    with pytest.raises(InvalidParametersError) as info:
        PayChargeClient(**options)
    assert [e.field for e in info.value.errors] == [field]
    assert SECRET not in str(info.value)


def test_validators_are_reusable_and_normalise() -> None:
    assert v.validate_currency("jpy") == "JPY"
    assert v.validate_uuid(uuid.UUID(TOKEN), "x") == TOKEN
    assert v.validate_limit(10) == 10
    assert v.validate_limit(100) == 100
    assert v.validate_ipv4("192.0.2.1") == "192.0.2.1"
    assert v.validate_metadata({"d": Decimal("1.50")}) == {"d": "1.50"}
    assert v.validate_aware_datetime("2024-01-01T00:00:00Z", "from") == "2024-01-01T00:00:00+00:00"
    with pytest.raises(InvalidParametersError) as info:
        v.validate_amount(0, "lines.0.amount")
    assert info.value.errors[0].field == "lines.0.amount"


@pytest.mark.parametrize("text", ["2030-01-01T00:00:00-19:58", "2030-01-01T00:00:00+14:01"])
def test_a_time_with_an_offset_no_place_uses_is_refused(text: str) -> None:
    assert v.validate_aware_datetime("2030-01-01T00:00:00+14:00", "capture_at")
    assert v.validate_aware_datetime("2030-01-01T00:00:00-12:00", "capture_at")
    with pytest.raises(InvalidParametersError) as info:
        v.validate_aware_datetime(text, "capture_at")
    assert info.value.errors[0].field == "capture_at"


@pytest.mark.parametrize(
    ("given", "sent"),
    [("jpy", "JPY"), ("JPY", "JPY"), ("usd", "USD"), ("kwd", "KWD"), ("clf", "CLF")],
)
def test_listed_currencies_are_upper_cased(given: str, sent: str) -> None:
    from django_paycharge.client.validation import validate_currency

    assert validate_currency(given) == sent


def test_client_options_are_one_checked_type() -> None:
    from django_paycharge.client.options import ClientOptions

    options = ClientOptions.checked(base_url=BASE + "/", secret=SECRET, jwt=JWT, timeout=7)
    assert options.base_url == BASE
    assert options.timeout == (7.0, 7.0)
    assert options.backoff_base == 0.5
    assert SECRET not in repr(options)
    assert JWT not in repr(options)
    with pytest.raises(InvalidParametersError) as info:
        ClientOptions.checked(secret=SECRET, jwt=JWT, pool_size=0)
    assert [e.field for e in info.value.errors] == ["base_url", "pool_size"]
    with pytest.raises(TypeError, match="pool"):
        ClientOptions.checked(base_url=BASE, secret=SECRET, jwt=JWT, pools=1)
