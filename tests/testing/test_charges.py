"""POST /charges: validation rules, the create answer, the lifecycle, idempotency, polling."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from django_paycharge.testing import CARD_DECLINED, CARD_INSUFFICIENT_FUNDS, TEST_STORE_ID
from tests.waiting import join, wait_until

from .conftest import Gw


def _fields(answer: Any, status: int = 400, code: str = "VALIDATION_ERROR") -> set[str]:
    assert answer.status_code == status, answer.text
    assert answer.json()["code"] == code
    return {e["field"] for e in answer.json()["errors"]}


def _body(gw: Gw, **fields: Any) -> dict[str, Any]:
    return {"transaction_token_id": gw.token(), "amount": 1000, "currency": "JPY", **fields}


def test_create_answer_is_pending_with_every_field(gw: Gw) -> None:
    answer = gw.post(
        "/charges",
        json=_body(
            gw,
            metadata={"order": "A-1", "n": 3},
            redirect={"endpoint": "https://shop.example/r"},
            merchant_transaction_id="order-1",
        ),
    )
    assert answer.status_code == 201
    assert answer.headers["Content-Type"] == "application/json"
    charge = answer.json()
    assert charge["status"] == "pending"
    for name in (
        "charged_amount",
        "charged_currency",
        "charged_amount_formatted",
        "fee_amount",
        "fee_currency",
        "fee_amount_formatted",
        "error",
        "subscription_id",
    ):
        assert charge[name] is None, name
    # As the SDK's types: three_ds only when given, names only on list items.
    assert not {"three_ds", "merchant_name", "store_name"} & set(charge)
    assert charge["merchant_id"]
    assert charge["store_id"] == TEST_STORE_ID
    assert charge["transaction_token_type"] == "one_time"
    assert charge["requested_amount"] == 1000
    assert charge["requested_amount_formatted"] == 1000
    assert charge["mode"] == "test"
    assert charge["only_direct_currency"] is False
    assert charge["metadata"] == {"order": "A-1", "n": 3}
    assert charge["redirect"]["endpoint"] == "https://shop.example/r"
    assert charge["redirect"]["redirect_id"]
    assert charge["created_on"].endswith("Z") and "." in charge["created_on"]
    [listed] = gw.get("/charges").json()["items"]
    assert listed["merchant_name"] and listed["store_name"]
    assert {k: v for k, v in listed.items() if not k.endswith("_name")} == gw.read(charge["id"])
    after = gw.read(charge["id"])
    assert after["status"] == "successful"
    assert after["charged_amount"] == 1000
    assert after["fee_amount"] == 36  # 3.6 %, rounded down
    assert after["fee_currency"] == "JPY"


def test_usd_formatted_amounts_are_major_units(gw: Gw) -> None:
    charge = gw.charge(amount=1050, currency="usd")
    assert charge["requested_currency"] == "USD"
    assert charge["requested_amount_formatted"] == 10.5
    assert gw.read(charge["id"])["fee_amount_formatted"] == "0.37"  # text, as the SDK types it


@pytest.mark.parametrize(
    ("currency", "requested", "fee"),
    [("JPY", 1234567, "44444"), ("KWD", 1234.567, "44.444"), ("USD", 12345.67, "444.44")],
)
def test_formatted_amounts_follow_the_currency_exponent(gw: Gw, currency, requested, fee) -> None:
    charge = gw.read(gw.charge(amount=1234567, currency=currency)["id"])
    assert charge["requested_amount_formatted"] == requested
    assert charge["charged_amount_formatted"] == requested
    assert charge["fee_amount_formatted"] == fee  # 3.6 % of 1,234,567 is 44,444


def test_no_redirect_key_without_endpoint(gw: Gw) -> None:
    assert "redirect" not in gw.charge()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"amount": 0}, "amount"),
        ({"amount": -5}, "amount"),
        ({"amount": 10.5}, "amount"),
        ({"amount": "1000"}, "amount"),
        ({"amount": True}, "amount"),
        ({"currency": "YEN!"}, "currency"),
        ({"currency": None}, "currency"),
        ({"transaction_token_id": "not-a-uuid"}, "transaction_token_id"),
        ({"transaction_token_id": None}, "transaction_token_id"),
        ({"three_ds": {"mode": "sometimes"}}, "three_ds.mode"),
        ({"three_ds": {"redirect_endpoint": "/relative"}}, "three_ds.redirect_endpoint"),
        ({"client_metadata": {"ip_address": "::1"}}, "client_metadata.ip_address"),
        ({"client_metadata": {"ip_address": "300.1.1.1"}}, "client_metadata.ip_address"),
        ({"redirect": {"endpoint": "ftp://x.example/"}}, "redirect.endpoint"),
        ({"redirect": {"endpoint": "shop.example/return"}}, "redirect.endpoint"),
        ({"metadata": {"nested": {"a": 1}}}, "metadata"),
        ({"metadata": ["a"]}, "metadata"),
        ({"capture_at": "tomorrow"}, "capture_at"),
        ({"capture": "no"}, "capture"),
        ({"merchant_transaction_id": ""}, "merchant_transaction_id"),
    ],
)
def test_validation_rules(gw: Gw, change: dict[str, Any], field: str) -> None:
    assert field in _fields(gw.post("/charges", json=_body(gw, **change)))
    assert len(gw.handle.charges) == 0


def test_all_errors_are_reported_together(gw: Gw) -> None:
    answer = gw.post("/charges", json={"amount": -1, "currency": "x"})
    assert _fields(answer) == {"transaction_token_id", "amount", "currency"}


@pytest.mark.parametrize("mode", ["normal", "require", "force", "skip", "if_available", "provided"])
def test_three_ds_modes_accepted(gw: Gw, mode: str) -> None:
    charge = gw.charge(three_ds={"mode": mode, "redirect_endpoint": "https://shop.example/3ds?x=1"})
    assert charge["three_ds"] == {"mode": mode, "redirect_endpoint": "https://shop.example/3ds?x=1"}


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'"text"', b""])
def test_body_must_be_a_json_object(gw: Gw, body: bytes) -> None:
    answer = gw.post("/charges", data=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["code"] == "INVALID_REQUEST_BODY"


def test_unknown_token_is_not_found(gw: Gw) -> None:
    answer = gw.post(
        "/charges",
        json={**_body(gw), "transaction_token_id": "9" * 8 + "-9999-4999-8999-" + "9" * 12},
    )
    assert _fields(answer, 404, "NOT_FOUND") == {"transaction_token_id"}


def test_merchant_transaction_id_unique_per_store(gw: Gw) -> None:
    gw.charge(merchant_transaction_id="order-7")
    answer = gw.post("/charges", json=_body(gw, merchant_transaction_id="order-7"))
    assert _fields(answer, 409, "NON_UNIQUE_MERCHANT_TRANSACTION_ID") == {"merchant_transaction_id"}


@pytest.mark.parametrize("brand", ["alipay_online", "alipay_plus_online", "wechat_online"])
def test_merchant_transaction_id_limit_for_cross_border_brands(gw: Gw, brand: str) -> None:
    token = gw.token("online", brand=brand)
    for bad in ("a" * 33, "order-1"):
        answer = gw.post(
            "/charges", json=_body(gw, transaction_token_id=token, merchant_transaction_id=bad)
        )
        assert _fields(answer) == {"merchant_transaction_id"}
    gw.charge(token, merchant_transaction_id="A" * 32)
    # Other brands take the longer, punctuated form.
    gw.charge(gw.token("online", brand="paypay"), merchant_transaction_id="order-1-" + "x" * 40)


@pytest.mark.parametrize("payment_type", ["online", "konbini", "bank_transfer"])
def test_capture_false_only_for_card(gw: Gw, payment_type: str) -> None:
    answer = gw.post(
        "/charges", json=_body(gw, transaction_token_id=gw.token(payment_type), capture=False)
    )
    assert _fields(answer) == {"capture"}


@pytest.mark.parametrize(
    ("number", "status", "code"),
    [
        ("4242424242424242", "successful", None),
        (CARD_DECLINED, "failed", 306),
        (CARD_INSUFFICIENT_FUNDS, "failed", 330),
    ],
)
def test_card_outcomes(gw: Gw, number: str, status: str, code: int | None) -> None:
    charge = gw.charge(gw.token(card_number=number))
    assert charge["status"] == "pending"
    after = gw.read(charge["id"])
    assert after["status"] == status
    if code is None:
        assert after["error"] is None
    else:
        assert after["error"]["code"] == code
        assert after["error"]["message"] and after["error"]["detail"]
        assert after["charged_amount"] is None and after["fee_amount"] is None


def test_card_authorize_then_capture(gw: Gw) -> None:
    charge = gw.charge(capture=False, capture_at="2099-01-01T00:00:00Z")
    assert gw.read(charge["id"])["status"] == "authorized"
    assert gw.read(charge["id"])["capture_at"] == "2099-01-01T00:00:00Z"
    assert gw.handle.complete(charge["id"])["status"] == "successful"


@pytest.mark.parametrize("payment_type", ["online", "konbini", "bank_transfer"])
def test_awaiting_then_paid_failed_or_expired(gw: Gw, payment_type: str) -> None:
    paid, failed, expired = (gw.charge(gw.token(payment_type)) for _ in range(3))
    for charge in (paid, failed, expired):
        assert gw.read(charge["id"])["status"] == "awaiting"
    done = gw.handle.complete(paid["id"])
    assert (
        done["status"] == "successful"
        and done["charged_amount"] == 1000
        and done["fee_amount"] == 36
    )
    assert gw.handle.fail(failed["id"], 330, "insufficient funds")["error"]["code"] == 330
    assert gw.handle.expire(expired["id"])["status"] == "canceled"
    assert [gw.read(c["id"])["status"] for c in (paid, failed, expired)] == [
        "successful",
        "failed",
        "canceled",
    ]


def test_final_charges_cannot_change(gw: Gw) -> None:
    charge = gw.charge()
    from django_paycharge.testing import ApiError

    with pytest.raises(ApiError):
        gw.handle.expire(charge["id"])


def test_idempotent_replay_conflict(gw: Gw) -> None:
    body = _body(gw)
    first = gw.post("/charges", json=body, headers={"Idempotency-Key": "k-1"})
    again = gw.post("/charges", json=body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotency-Status"] == "retrieved_idempotent_response"
    # The values the Java SDK reads into IdempotencyStatus.
    assert first.headers["Idempotency-Status"] == "successfully_stored"
    assert len(gw.handle.charges) == 1
    other = gw.post("/charges", json={**body, "amount": 2000}, headers={"Idempotency-Key": "k-1"})
    assert other.status_code == 409 and other.json()["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert other.headers["Idempotency-Status"] == "conflicting_key"
    unkeyed = gw.post("/charges", json=_body(gw))
    assert "Idempotency-Status" not in unkeyed.headers
    fresh = gw.post("/charges", json=body, headers={"Idempotency-Key": "k-2"})
    assert fresh.json()["id"] != first.json()["id"]


def _in_progress(gw: Gw, key: str) -> bool:
    records = list(gw.handle.state.idempotency.items())
    return any(held == key and record.response is None for (_, held), record in records)


def test_idempotency_key_in_progress(gw: Gw) -> None:
    body = _body(gw)
    gw.handle.add_fault("POST", r"^/charges$", action="latency", latency=2.0, count=1)
    results: list[Any] = []
    slow = threading.Thread(
        target=lambda: results.append(
            gw.post("/charges", json=body, headers={"Idempotency-Key": "k"})
        )
    )
    slow.start()
    # Once the gateway holds the key (it sleeps after claiming it), however busy the host.
    wait_until(lambda: _in_progress(gw, "k"), "the gateway to hold the key", every=0.01)
    # It holds it for 2 s from then: one request needs milliseconds, two orders of magnitude less.
    second = gw.post("/charges", json=body, headers={"Idempotency-Key": "k"})
    join(slow, "the slow create")
    assert second.status_code == 409
    assert second.json()["code"] == "IDEMPOTENCY_KEY_IN_PROGRESS"
    assert results[0].status_code == 201
    assert (
        gw.post("/charges", json=body, headers={"Idempotency-Key": "k"}).headers[
            "Idempotency-Status"
        ]
        == "retrieved_idempotent_response"
    )


def test_polling_waits_for_the_status_change(gw: Gw) -> None:
    gw.handle.processing_delay = 0.3
    gw.handle.polling_timeout = 60  # a poll that waited for its limit would take this long
    charge = gw.charge()
    assert gw.read(charge["id"])["status"] == "pending"
    started = time.monotonic()
    assert gw.read(charge["id"], polling="true")["status"] == "successful"
    assert 0.05 < time.monotonic() - started < 30


def test_polling_gives_up_after_the_timeout(gw: Gw) -> None:
    gw.handle.processing_delay = 600
    gw.handle.polling_timeout = 0.2
    charge = gw.charge()
    started = time.monotonic()
    assert gw.read(charge["id"], polling="true")["status"] == "pending"
    # Held for its limit, not until the charge moves on (600 s).
    assert 0.15 < time.monotonic() - started < 60
    gw.handle.advance(charge["id"])
    assert gw.read(charge["id"], polling="true")["status"] == "successful"


def test_polling_returns_at_once_when_not_pending(gw: Gw) -> None:
    gw.handle.polling_timeout = 60  # what a poll of a pending charge would wait
    charge = gw.charge(gw.token("konbini"))
    started = time.monotonic()
    assert gw.read(charge["id"], polling="true")["status"] == "awaiting"
    assert time.monotonic() - started < 30
