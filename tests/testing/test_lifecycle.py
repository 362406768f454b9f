"""The fake's capture, metadata update, refunds and cancels, on both front ends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from django_paycharge.client.vocabulary import LIFECYCLE_ERROR_CODES
from django_paycharge.testing import CARD_DECLINED, TEST_STORE_ID

from .conftest import Gw, wait_deliveries

BASE = f"/stores/{TEST_STORE_ID}/charges"


def errors(answer) -> list[tuple[str, str]]:
    return [(e["field"], e["reason"]) for e in answer.json()["errors"]]


def test_capture_whole_partial_and_never_twice(gw: Gw) -> None:
    whole = gw.charge(capture=False)
    assert gw.read(whole["id"])["status"] == "authorized"
    answer = gw.post(f"{BASE}/{whole['id']}/capture")
    assert (answer.status_code, answer.json()) == (200, {})
    charged = gw.read(whole["id"])
    assert (charged["status"], charged["charged_amount"]) == ("successful", 1000)
    again = gw.post(f"{BASE}/{whole['id']}/capture")
    assert again.status_code == 400 and again.json()["code"] == "ALREADY_CAPTURED"

    part = gw.charge(capture=False)
    body = {"amount": 400, "currency": "JPY"}
    assert gw.post(f"{BASE}/{part['id']}/capture", json=body).status_code == 200
    read = gw.read(part["id"])
    assert (read["charged_amount"], read["fee_amount"]) == (400, 14)


@pytest.mark.parametrize(
    ("body", "code", "expected"),
    [
        ({"amount": 1001, "currency": "JPY"}, "CAPTURE_AMOUNT_TOO_LARGE", [("amount", "1001")]),
        (
            {"amount": 0, "currency": "JPY"},
            "VALIDATION_ERROR",
            [("amount", "MUST_BE_POSITIVE_INTEGER")],
        ),
        ({"amount": 10, "currency": "USD"}, "CURRENCY_MUST_MATCH_CHARGE", [("currency", "USD")]),
        (
            {"amount": 10, "currency": "Y1"},
            "VALIDATION_ERROR",
            [("currency", "INVALID_FORMAT_CURRENCY")],
        ),
    ],
)
def test_capture_validation(gw: Gw, body, code, expected) -> None:
    charge = gw.charge(capture=False)
    answer = gw.post(f"{BASE}/{charge['id']}/capture", json=body)
    assert answer.status_code == 400 and answer.json()["code"] == code
    assert errors(answer) == expected
    assert gw.read(charge["id"])["status"] == "authorized"


def test_a_canceled_authorization_cannot_be_captured(gw: Gw) -> None:
    charge = gw.charge(capture=False)
    cancel = gw.post(f"{BASE}/{charge['id']}/cancels", json={"metadata": {"why": "stock"}})
    assert cancel.status_code == 201 and cancel.json()["status"] == "pending"
    assert gw.read(charge["id"])["status"] == "canceled"
    done = gw.get(f"{BASE}/{charge['id']}/cancels/{cancel.json()['id']}").json()
    assert done["status"] == "successful" and done["metadata"] == {"why": "stock"}
    answer = gw.post(f"{BASE}/{charge['id']}/capture")
    assert answer.status_code == 400 and answer.json()["code"] == "VALIDATION_ERROR"
    assert errors(answer) == [("status", "INVALID_CHARGE_STATUS")]


def test_an_expired_authorization_fails_at_capture(gw: Gw) -> None:
    charge = gw.charge(capture=False)
    assert gw.post(f"/_fake/charges/{charge['id']}/expire_authorization").status_code == 200
    assert gw.post(f"{BASE}/{charge['id']}/capture").status_code == 200
    read = gw.read(charge["id"])
    assert read["status"] == "failed" and read["error"]["code"] == 313


def test_partial_refunds_add_up_to_at_most_the_charged_amount(gw: Gw) -> None:
    charge = gw.charge()
    first = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 600, "currency": "jpy"})
    assert first.status_code == 201
    assert first.json()["status"] == "pending" and first.json()["amount"] == 600
    too_much = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 401, "currency": "JPY"})
    assert too_much.status_code == 400
    # Partial refunds adding up beyond the charge: the SDKs' table names this code for it.
    assert too_much.json()["code"] == "REFUND_NOT_WITHIN_BOUNDS"
    above = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1001, "currency": "JPY"})
    # One refund above the charge itself.
    assert (above.status_code, above.json()["code"]) == (400, "REFUND_EXCEEDS_CHARGE_AMOUNT")
    rest = gw.post(
        f"{BASE}/{charge['id']}/refunds",
        json={"amount": 400, "currency": "JPY", "reason": "fraud", "message": "card stolen"},
    )
    assert rest.status_code == 201
    listed = gw.get(f"{BASE}/{charge['id']}/refunds").json()
    assert [r["amount"] for r in listed["items"]] == [400, 600]  # newest first
    assert {r["status"] for r in listed["items"]} == {"successful"}
    assert listed["has_more"] is False
    one = gw.get(f"{BASE}/{charge['id']}/refunds/{rest.json()['id']}").json()
    assert (one["reason"], one["message"], one["charge_id"]) == (
        "fraud",
        "card stolen",
        charge["id"],
    )
    assert gw.read(charge["id"])["status"] == "successful"  # refunds leave the charge as it is


@pytest.mark.parametrize(
    ("body", "code", "expected"),
    [
        ({"amount": 10}, "VALIDATION_ERROR", [("currency", "INVALID_FORMAT_CURRENCY")]),
        ({"amount": 10, "currency": "USD"}, "CURRENCY_MUST_MATCH_CHARGE", [("currency", "USD")]),
        (
            {"amount": 10, "currency": "JPY", "reason": "chargeback"},
            "VALIDATION_ERROR",
            [("reason", "INVALID_ENUM_VALUE")],
        ),
        (
            {"amount": -1, "currency": "JPY"},
            "VALIDATION_ERROR",
            [("amount", "MUST_BE_POSITIVE_INTEGER")],
        ),
    ],
)
def test_refund_validation(gw: Gw, body, code, expected) -> None:
    charge = gw.charge()
    answer = gw.post(f"{BASE}/{charge['id']}/refunds", json=body)
    assert answer.status_code == 400 and answer.json()["code"] == code
    assert errors(answer) == expected


@pytest.mark.parametrize("payment_type", ["konbini", "bank_transfer"])
def test_store_and_bank_payments_cannot_be_refunded_or_canceled_once_paid(gw: Gw, payment_type):
    charge = gw.charge(gw.token(payment_type))
    gw.handle.complete(charge["id"])
    refund = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1, "currency": "JPY"})
    assert refund.status_code == 400 and refund.json()["code"] == "REFUND_NOT_ALLOWED"
    cancel = gw.post(f"{BASE}/{charge['id']}/cancels")
    assert cancel.status_code == 400 and cancel.json()["code"] == "CANCEL_NOT_ALLOWED"


def test_only_successful_charges_are_refunded_and_refunded_ones_not_canceled(gw: Gw) -> None:
    authorized = gw.charge(capture=False)
    answer = gw.post(f"{BASE}/{authorized['id']}/refunds", json={"amount": 1, "currency": "JPY"})
    assert answer.status_code == 400
    assert answer.json()["code"] == "CANNOT_REFUND_UNSUCCESSFUL_CHARGE"
    assert errors(answer) == [("status", "authorized")]
    paid = gw.charge()
    gw.post(f"{BASE}/{paid['id']}/refunds", json={"amount": 1, "currency": "JPY"})
    cancel = gw.post(f"{BASE}/{paid['id']}/cancels")
    assert cancel.status_code == 400 and cancel.json()["code"] == "CANCEL_NOT_ALLOWED"
    assert errors(cancel) == [("refunds", "EXIST")]


def test_a_refund_can_fail_while_pending(gw: Gw) -> None:
    charge = gw.charge()
    gw.handle.processing_delay = 60
    refund = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 5, "currency": "JPY"})
    failed = gw.post(f"/_fake/refunds/{refund.json()['id']}/fail").json()
    assert failed["status"] == "failed" and failed["error"]["code"] == 329
    # A failed refund gave nothing back: the whole amount can still be refunded.
    answer = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1000, "currency": "JPY"})
    assert answer.status_code == 201


def test_refund_and_cancel_webhooks_carry_the_resource(gw: Gw) -> None:
    received: list[tuple[str, dict[str, Any]]] = []

    def transport(url: str, headers: dict[str, str], body: bytes) -> int:
        payload = json.loads(body)
        received.append((payload["event"], payload["data"]))
        return 200

    gw.handle.set_transport(transport)
    gw.handle.add_webhook(
        "https://shop.example/hook", triggers=["refund_finished", "cancel_finished"]
    )
    charge = gw.charge()
    refund = gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 7, "currency": "JPY"})
    authorized = gw.charge(capture=False)
    cancel = gw.post(f"{BASE}/{authorized['id']}/cancels")
    wait_deliveries(gw)
    assert [(e, d["id"], d["status"]) for e, d in received] == [
        ("refund_finished", refund.json()["id"], "successful"),
        ("cancel_finished", cancel.json()["id"], "successful"),
    ]


def test_patch_adds_metadata_and_the_return_keeps_the_first(gw: Gw) -> None:
    charge = gw.charge(
        gw.token("online", brand="paypay", call_method="http_get"),
        metadata={"order": "1"},
        redirect={"endpoint": "https://shop.example/back"},
    )
    answer = gw.call("PATCH", f"{BASE}/{charge['id']}", json={"metadata": {"note": "gift"}})
    assert answer.status_code == 200
    assert answer.json()["metadata"] == {"order": "1", "note": "gift"}
    bad = gw.call("PATCH", f"{BASE}/{charge['id']}", json={"metadata": {"x": [1]}})
    assert bad.status_code == 400
    token = gw.get(f"{BASE}/{charge['id']}/issuer_token").json()
    path = token["issuer_token"].removeprefix(gw.base_url)
    paid = gw.get(path, params=token["payload"], allow_redirects=False)
    assert paid.status_code == 303
    assert "order=1" in paid.headers["Location"] and "note" not in paid.headers["Location"]


def test_a_lost_refund_answer_is_replayed_for_the_same_key(gw: Gw) -> None:
    charge = gw.charge()
    key = {"Idempotency-Key": "refund-key-1"}
    body = {"amount": 300, "currency": "JPY"}
    first = gw.post(f"{BASE}/{charge['id']}/refunds", json=body, headers=key)
    again = gw.post(f"{BASE}/{charge['id']}/refunds", json=body, headers=key)
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotency-Status"] == "retrieved_idempotent_response"
    assert len(gw.handle.state.refunds) == 1
    other = gw.post(f"{BASE}/{charge['id']}/refunds", json={**body, "amount": 1}, headers=key)
    assert other.status_code == 409 and other.json()["code"] == "IDEMPOTENCY_KEY_CONFLICT"


def test_lists_paginate_with_a_cursor(gw: Gw) -> None:
    charge = gw.charge(amount=10_000)
    ids = [
        gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1, "currency": "JPY"}).json()[
            "id"
        ]
        for _ in range(12)
    ]
    page = gw.get(f"{BASE}/{charge['id']}/refunds", params={"limit": 10}).json()
    assert page["has_more"] is True and [r["id"] for r in page["items"]] == ids[::-1][:10]
    rest = gw.get(
        f"{BASE}/{charge['id']}/refunds", params={"limit": 10, "cursor": page["items"][-1]["id"]}
    ).json()
    assert [r["id"] for r in rest["items"]] == ids[1::-1] and rest["has_more"] is False


def _table_row(gw: Gw, row: str) -> Any:
    """Make the wrong request of one row of issue 30's table; the fake's answer."""
    if row == "capture twice":
        charge = gw.charge(capture=False)
        gw.post(f"{BASE}/{charge['id']}/capture")
        return gw.post(f"{BASE}/{charge['id']}/capture")
    if row == "refund a failed charge":
        token = gw.token("card", card_number=CARD_DECLINED)
        charge = gw.charge(token)
        assert gw.read(charge["id"])["status"] == "failed"
        return gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1, "currency": "JPY"})
    if row == "cancel a canceled charge":
        charge = gw.charge(capture=False)
        gw.post(f"{BASE}/{charge['id']}/cancels")
        assert gw.read(charge["id"])["status"] == "canceled"
        return gw.post(f"{BASE}/{charge['id']}/cancels")
    if row == "cancel a paid konbini charge":
        charge = gw.charge(gw.token("konbini"))
        gw.handle.complete(charge["id"])
        return gw.post(f"{BASE}/{charge['id']}/cancels")
    charge = gw.charge(capture=row != "capture above the authorization")
    if row == "refund above what is left":
        gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 600, "currency": "JPY"})
        return gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 401, "currency": "JPY"})
    if row == "refund above the charge":
        return gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1001, "currency": "JPY"})
    if row == "refund in another currency":
        return gw.post(f"{BASE}/{charge['id']}/refunds", json={"amount": 1, "currency": "USD"})
    assert row == "capture above the authorization"
    return gw.post(f"{BASE}/{charge['id']}/capture", json={"amount": 1001, "currency": "JPY"})


@pytest.mark.parametrize(
    ("row", "code"),
    [
        ("capture twice", "ALREADY_CAPTURED"),
        ("refund a failed charge", "CANNOT_REFUND_UNSUCCESSFUL_CHARGE"),
        ("cancel a canceled charge", "CANCEL_NOT_ALLOWED"),
        ("cancel a paid konbini charge", "CANCEL_NOT_ALLOWED"),
        ("refund above what is left", "REFUND_NOT_WITHIN_BOUNDS"),
        ("refund above the charge", "REFUND_EXCEEDS_CHARGE_AMOUNT"),
        ("refund in another currency", "CURRENCY_MUST_MATCH_CHARGE"),
        ("capture above the authorization", "CAPTURE_AMOUNT_TOO_LARGE"),
    ],
)
def test_the_documented_answers_to_wrong_lifecycle_requests(gw: Gw, row: str, code: str) -> None:
    """Issue 30's table: the official SDKs' documented status and code for each."""
    answer = _table_row(gw, row)
    body = answer.json()
    assert (answer.status_code, body["status"], body["code"]) == (400, "error", code)
    assert code in LIFECYCLE_ERROR_CODES


def test_a_resend_after_the_key_expired_gets_the_documented_refusal(gw: Gw) -> None:
    """The gateway forgets finished keys: the same request is then a new one, and refused."""
    charge = gw.charge(capture=False)
    key = {"Idempotency-Key": "capture-key-1"}
    assert gw.post(f"{BASE}/{charge['id']}/capture", headers=key).status_code == 200
    assert gw.handle.forget_idempotency_keys() == 1
    again = gw.post(f"{BASE}/{charge['id']}/capture", headers=key)
    assert (again.status_code, again.json()["code"]) == (400, "ALREADY_CAPTURED")
