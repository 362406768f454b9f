"""ChargeCreateParams: the one definition of a new charge's parameters."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest

from django_paycharge.api.create import ChargeCreateSerializer
from django_paycharge.client.params import (
    CREATE_FIELDS,
    REQUIRED_CREATE_FIELDS,
    ChargeCreateParams,
    wire_name,
)
from django_paycharge.exceptions import InvalidParametersError

TOKEN = "0f4b5e64-86a3-4b0c-9f2b-6a9a3c3d7e11"
FULL = ChargeCreateParams(
    transaction_token_id=uuid.UUID(TOKEN),
    amount=1000,
    currency="jpy",
    capture=False,
    capture_at=datetime(2030, 1, 1, 12, 0, tzinfo=UTC),
    merchant_transaction_id="order-42",
    ip_address="192.0.2.1",
    metadata={"order": 42},
    redirect_endpoint="https://shop.example/return",
    three_ds_redirect_endpoint="https://shop.example/3ds",
    three_ds_mode="normal",
)
BODY = {
    "transaction_token_id": TOKEN,
    "amount": 1000,
    "currency": "JPY",
    "capture": False,
    "capture_at": "2030-01-01T12:00:00+00:00",
    "merchant_transaction_id": "order-42",
    "client_metadata": {"ip_address": "192.0.2.1"},
    "metadata": {"order": 42},
    "redirect": {"endpoint": "https://shop.example/return"},
    "three_ds": {"redirect_endpoint": "https://shop.example/3ds", "mode": "normal"},
}


def test_to_body_is_the_gateways_json_in_its_order():
    body = FULL.to_body()
    assert body == BODY
    assert list(body) == list(BODY)


def test_fields_left_none_are_not_sent():
    minimal = ChargeCreateParams(transaction_token_id=TOKEN, amount=1, currency="USD")
    assert minimal.to_body() == {"transaction_token_id": TOKEN, "amount": 1, "currency": "USD"}
    assert minimal.to_dict() == {"transaction_token_id": TOKEN, "amount": 1, "currency": "USD"}


def test_every_broken_field_is_named_by_its_place_in_the_body():
    broken = dataclasses.replace(
        FULL, amount=0, ip_address="::1", three_ds_mode="sometimes", redirect_endpoint="ftp://x"
    )
    with pytest.raises(InvalidParametersError) as caught:
        broken.to_body()
    fields = [e.field for e in caught.value.errors]
    assert fields == ["amount", "client_metadata.ip_address", "redirect.endpoint", "three_ds.mode"]


def test_required_fields_are_checked_even_when_none():
    params = ChargeCreateParams(transaction_token_id=None, amount=None, currency=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidParametersError) as caught:
        params.to_body()
    assert {e.field for e in caught.value.errors} == set(REQUIRED_CREATE_FIELDS)
    assert {"transaction_token_id", "amount", "currency"} == REQUIRED_CREATE_FIELDS


def test_the_type_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FULL.amount = 5  # type: ignore[misc]


def test_given_takes_the_object_or_its_fields_never_both():
    assert ChargeCreateParams.given(FULL, {}) is FULL
    assert ChargeCreateParams.given(None, FULL.to_dict()) == FULL
    with pytest.raises(TypeError):
        ChargeCreateParams.given(FULL, {"amount": 5})
    with pytest.raises(TypeError, match="amont"):
        ChargeCreateParams.given(None, {**FULL.to_dict(), "amont": 5})
    with pytest.raises(TypeError):
        ChargeCreateParams.given(None, {"amount": 5, "currency": "JPY"})  # no token


def test_a_body_reads_back_into_the_same_params():
    values, errors = ChargeCreateParams.fields_from_body(FULL.to_body())
    assert errors == []
    assert ChargeCreateParams(**values).to_body() == BODY


def test_reading_a_body_names_unknown_and_misshapen_fields():
    body = {"amount": 1, "colour": "red", "redirect": "https://x", "three_ds": {"moed": "skip"}}
    values, errors = ChargeCreateParams.fields_from_body(body, extra=("reference",))
    assert values["amount"] == 1 and values["reference"] is None
    assert [(e.field, e.reason) for e in errors] == [
        ("colour", "is not a known field"),
        ("redirect", "must be a JSON object"),
        ("three_ds.moed", "is not a known field"),
    ]


def test_the_api_schema_describes_exactly_the_body_of_the_type():
    described = set()
    for name, field in ChargeCreateSerializer().fields.items():
        if hasattr(field, "fields"):
            described |= {f"{name}.{inner}" for inner in field.fields}
        else:
            described.add(name)
    assert described == {wire_name(f) for f in CREATE_FIELDS} | {"reference"}
