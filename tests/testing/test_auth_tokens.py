"""Credentials and transaction tokens."""

from __future__ import annotations

import datetime
import uuid

import pytest

from django_paycharge.testing import (
    TEST_JWT,
    TEST_MERCHANT_ID,
    TEST_SECRET,
    TEST_STORE_ID,
    make_jwt,
)

from .conftest import Gw

CARD = {"card_number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvv": "123"}
TOKEN_BODY = {"payment_type": "card", "type": "one_time", "email": "a@example.com", "data": CARD}
OTHER_STORE = "44444444-4444-4444-8444-444444444444"


def _error(answer: object, status: int, code: str) -> list[dict[str, str]]:
    import requests

    assert isinstance(answer, requests.Response)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == "error"
    assert body["code"] == code
    errors: list[dict[str, str]] = body["errors"]
    return errors


@pytest.mark.parametrize(
    ("header", "code"),
    [
        # The gateway's documented 401 codes.
        (None, "AUTH_HEADER_MISSING"),
        ("", "AUTH_HEADER_MISSING"),
        ("Bearer", "INVALID_APP_TOKEN"),
        (f"Bearer {TEST_SECRET}", "INVALID_APP_TOKEN"),
        (f"Bearer {TEST_JWT}", "INVALID_CREDENTIALS"),  # a known app token without its secret
        (f"Basic {TEST_SECRET}.{TEST_JWT}", "INVALID_APP_TOKEN"),
        (f"Bearer {TEST_SECRET}.{TEST_JWT}x", "INVALID_APP_TOKEN"),
        (f"Bearer wrong.{TEST_JWT}", "INVALID_CREDENTIALS"),
    ],
)
def test_server_side_calls_need_secret_and_jwt(gw: Gw, header: str | None, code: str) -> None:
    headers = {} if header is None else {"Authorization": header}
    gw.session.headers.pop("Authorization")
    answer = gw.get("/charges", headers=headers)
    _error(answer, 401, code)
    assert answer.headers["X-Request-Id"]
    uuid.UUID(answer.headers["X-Request-Id"])


def test_token_creation_accepts_the_jwt_alone(gw: Gw) -> None:
    answer = gw.post("/tokens", json=TOKEN_BODY, headers={"Authorization": f"Bearer {TEST_JWT}"})
    assert answer.status_code == 201, answer.text
    token = answer.json()
    assert token["store_id"] == TEST_STORE_ID
    assert token["payment_type"] == "card"
    assert token["data"]["last_four"] == "4242"
    assert token["data"]["brand"] == "visa"
    assert "4242424242424242" not in answer.text
    back = gw.get(f"/stores/{TEST_STORE_ID}/tokens/{token['id']}")
    assert back.status_code == 200
    assert back.json() == token


def test_jwt_alone_is_not_enough_elsewhere(gw: Gw) -> None:
    answer = gw.get("/charges", headers={"Authorization": f"Bearer {TEST_JWT}"})
    _error(answer, 401, "INVALID_CREDENTIALS")


def test_online_token_keeps_brand_and_call_method(gw: Gw) -> None:
    body = {
        "payment_type": "online",
        "type": "one_time",
        "email": "a@example.com",
        "data": {"brand": "alipay_online", "call_method": "http_get"},
    }
    token = gw.post("/tokens", json=body).json()
    back = gw.get(f"/stores/{TEST_STORE_ID}/tokens/{token['id']}").json()
    assert back["data"]["brand"] == "alipay_online"
    assert back["data"]["call_method"] == "http_get"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**TOKEN_BODY, "payment_type": "cash"}, "payment_type"),
        ({**TOKEN_BODY, "data": {**CARD, "card_number": "12"}}, "data.card_number"),
        ({**TOKEN_BODY, "data": {**CARD, "exp_month": 13}}, "data.exp_month"),
        ({**TOKEN_BODY, "email": "nope"}, "email"),
        ({"payment_type": "online", "data": {"call_method": "http_post"}}, "data.brand"),
        (
            {"payment_type": "online", "data": {"brand": "paypay", "call_method": "fax"}},
            "data.call_method",
        ),
        ({"payment_type": "konbini", "data": {"customer_name": "A"}}, "data.convenience_store"),
    ],
)
def test_token_validation(gw: Gw, body: dict[str, object], field: str) -> None:
    errors = _error(gw.post("/tokens", json=body), 400, "VALIDATION_ERROR")
    assert field in [e["field"] for e in errors]


def test_an_expired_card_is_refused_and_this_month_still_valid(gw: Gw) -> None:
    today = datetime.date.today()
    last_month = (today.year, today.month - 1) if today.month > 1 else (today.year - 1, 12)
    for year, month in [(2020, 12), last_month]:
        body = {**TOKEN_BODY, "data": {**CARD, "exp_month": month, "exp_year": year}}
        errors = _error(gw.post("/tokens", json=body), 400, "VALIDATION_ERROR")
        assert {"field": "data.exp_year", "reason": "CARD_EXPIRED"} in errors
    body = {**TOKEN_BODY, "data": {**CARD, "exp_month": today.month, "exp_year": today.year}}
    assert gw.post("/tokens", json=body).status_code == 201


def test_merchant_token_reaches_all_stores_but_cannot_create_tokens(gw: Gw) -> None:
    gw.handle.add_store(OTHER_STORE, merchant_id=TEST_MERCHANT_ID)
    jwt = make_jwt({"sub": "merchant-app"})
    gw.handle.add_app_token("m-secret", jwt)
    gw.session.headers["Authorization"] = f"Bearer m-secret.{jwt}"
    _error(gw.post("/tokens", json=TOKEN_BODY), 403, "INVALID_PERMISSIONS")
    _error(
        gw.post("/tokens", json=TOKEN_BODY, headers={"Authorization": f"Bearer {jwt}"}),
        403,
        "INVALID_PERMISSIONS",
    )
    mine = gw.handle.create_charge()
    theirs = gw.handle.create_charge(gw.handle.create_transaction_token(store_id=OTHER_STORE)["id"])
    listed = {c["id"] for c in gw.get("/charges").json()["items"]}
    assert listed == {mine["id"], theirs["id"]}
    assert gw.get(f"/stores/{OTHER_STORE}/charges/{theirs['id']}").status_code == 200


def test_store_token_cannot_read_another_store(gw: Gw) -> None:
    jwt = make_jwt({"sub": "other-store"})
    gw.handle.add_app_token("o-secret", jwt, store_id=OTHER_STORE)
    theirs = gw.handle.create_charge(gw.handle.create_transaction_token(store_id=OTHER_STORE)["id"])
    _error(gw.get(f"/stores/{OTHER_STORE}/charges/{theirs['id']}"), 403, "INVALID_PERMISSIONS")
    _error(gw.get(f"/stores/{TEST_STORE_ID}/charges/{theirs['id']}"), 404, "NOT_FOUND")
    assert gw.get("/charges").json()["items"] == []
    # The other store's token cannot charge with our store's token either.
    gw.session.headers["Authorization"] = f"Bearer o-secret.{jwt}"
    answer = gw.post(
        "/charges", json={"transaction_token_id": gw.token(), "amount": 1, "currency": "JPY"}
    )
    _error(answer, 404, "NOT_FOUND")


def test_make_jwt_is_well_formed() -> None:
    from django_paycharge.conf import looks_like_jwt

    assert looks_like_jwt(make_jwt({"a": 1}))
    assert looks_like_jwt(TEST_JWT)


def test_unknown_path_and_method(gw: Gw) -> None:
    _error(gw.get("/nothing/here"), 404, "NOT_FOUND")
    _error(gw.call("DELETE", "/charges"), 405, "METHOD_NOT_ALLOWED")
