"""Bodies the API cannot read answer 400 with the API's error shape, never 500."""

from __future__ import annotations

import json

import pytest

from django_paycharge.api.parsers import MAX_DEPTH
from django_paycharge.models import ChargeRequest
from django_paycharge.nesting import nesting_exceeds, text_nesting_exceeds

from .conftest import API, assert_error

pytestmark = pytest.mark.django_db
URL = f"{API}/charges/"
STOREFRONT = {
    "API_CREATE_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "API_CHARGE_HOOK": "tests.api.hooks.order_amount",
}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE = {
    "1.5 KB of [": "[" * 1536,
    "valid JSON 5000 deep": nested(5000),
    "valid JSON 900 deep": nested(900),
    "metadata 100 deep": json.dumps({"amount": 100, "currency": "JPY"})[:-1]
    + ', "metadata": {"k": '
    + nested(100)
    + "}}",
    "not JSON": "{nope",
    "lone surrogate": '{"transaction_token_id": "\\ud800"}',
}


@pytest.fixture
def storefront(settings, gateway):
    settings.PAYCHARGE = {**settings.PAYCHARGE, **STOREFRONT}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("who", ["anon", "staff"])
def test_unreadable_bodies_are_400(request, storefront, who, name):
    client = request.getfixturevalue(who)
    response = client.post(URL, HOSTILE[name], content_type="application/json")
    if name == "lone surrogate":  # readable: the serializer refuses it
        assert response.status_code == 400
    else:
        assert_error(response, 400, "parse_error")
    assert not ChargeRequest.objects.exists()  # nothing was sent


def test_the_message_says_the_body_is_nested_too_deeply(anon, storefront):
    response = anon.post(URL, "[" * 1536, content_type="application/json")
    body = assert_error(response, 400, "parse_error")
    assert "nested too deeply" in body["message"]
    body = assert_error(
        anon.post(URL, nested(MAX_DEPTH + 1), content_type="application/json"), 400, "parse_error"
    )
    assert f"{MAX_DEPTH} levels" in body["message"]


def test_nesting_is_measured_without_recursion():
    assert not nesting_exceeds({"a": [1, {"b": 2}]}, 3)
    assert nesting_exceeds({"a": [1, {"b": []}]}, 3)
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    assert nesting_exceeds(deep, MAX_DEPTH)


def test_nesting_of_text_is_read_as_written():
    assert not text_nesting_exceeds(b'{"a": "[[[[[[", "b": [1]}', 2)
    assert not text_nesting_exceeds('{"a": "\\"[[[[", "b": [1]}', 2)  # an escaped quote
    assert text_nesting_exceeds(b'{"a": [[1]]}', 2)
    assert text_nesting_exceeds(b"[" * 1536, 1000)  # unterminated: what it opened
    assert not text_nesting_exceeds(b"", 0)
    assert not text_nesting_exceeds(b'"[[[', 0)  # an unterminated string
