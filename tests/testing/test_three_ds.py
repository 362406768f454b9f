"""3-D Secure in the fake: the modes of spec rule 5, the issuer token and the challenge page."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from django_paycharge.testing import CARD_SUCCESS, CARD_THREE_DS, TEST_JWT, TEST_STORE_ID

from .conftest import Gw

BASE = f"/stores/{TEST_STORE_ID}/charges"
BACK = "https://shop.example/payments/return/3ds/?shop=1"


def card(gw: Gw, number: str, *, token_3ds: bool = False) -> str:
    extra = {"three_ds": {"enabled": True}} if token_3ds else {}
    return gw.token("card", card_number=number, **extra)


def status_after(gw: Gw, token: str, mode: str | None, **fields: object) -> str:
    three_ds = {"redirect_endpoint": BACK, **({"mode": mode} if mode else {})}
    charge = gw.charge(token, three_ds=three_ds, **fields)
    return str(gw.read(charge["id"])["status"])


# (card, 3-D Secure passed when the token was made, mode) -> status after processing.
# "awaiting" means the customer must answer the issuer's challenge.
MATRIX = [
    (CARD_THREE_DS, False, None, "awaiting"),  # the default is normal
    (CARD_THREE_DS, False, "normal", "awaiting"),
    (CARD_THREE_DS, True, "normal", "successful"),  # already done on the token: skipped
    (CARD_THREE_DS, True, "if_available", "successful"),
    (CARD_THREE_DS, True, "require", "awaiting"),  # asked again although done on the token
    (CARD_SUCCESS, False, "require", "successful"),  # risk-based: no challenge needed
    (CARD_SUCCESS, False, "normal", "successful"),
    (CARD_SUCCESS, True, "force", "awaiting"),  # a challenge, always
    (CARD_THREE_DS, False, "skip", "successful"),  # never
]


@pytest.mark.parametrize(("number", "token_3ds", "mode", "expected"), MATRIX)
def test_each_mode_does_what_rule_5_says(gw: Gw, number, token_3ds, mode, expected) -> None:
    assert status_after(gw, card(gw, number, token_3ds=token_3ds), mode) == expected


def test_the_token_shows_its_own_3ds_result(gw: Gw) -> None:
    token = card(gw, CARD_THREE_DS, token_3ds=True)
    read = gw.get(f"/stores/{TEST_STORE_ID}/tokens/{token}").json()
    assert read["data"]["three_ds"] == {"enabled": True, "status": "successful"}
    data = {"card_number": CARD_THREE_DS, "exp_month": 12, "exp_year": 2099, "three_ds": "yes"}
    bad = gw.post("/tokens", json={"payment_type": "card", "data": data})
    assert bad.status_code == 400
    assert bad.json()["errors"] == [{"field": "data.three_ds.enabled", "reason": "MUST_BE_BOOLEAN"}]


def test_skip_needs_the_app_tokens_secret(gw: Gw) -> None:
    body = {
        "transaction_token_id": card(gw, CARD_THREE_DS),
        "amount": 500,
        "currency": "JPY",
        "three_ds": {"mode": "skip"},
    }
    widget_only = gw.post("/charges", json=body, headers={"Authorization": f"Bearer {TEST_JWT}"})
    assert widget_only.status_code == 401
    assert gw.post("/charges", json=body).status_code == 201


def three_ds_token(gw: Gw, charge_id: str) -> dict[str, Any]:
    answer = gw.get(f"{BASE}/{charge_id}/three_ds/issuer_token")
    assert answer.status_code == 200, answer.text
    token: dict[str, Any] = answer.json()
    return token


def submit(gw: Gw, url: str, fields: dict[str, Any], **kwargs):
    return gw.post(url.removeprefix(gw.base_url), data=fields, allow_redirects=False, **kwargs)


@pytest.mark.parametrize("capture", [True, False])
def test_passing_the_challenge_charges_the_card_and_returns_to_the_shop(gw: Gw, capture) -> None:
    charge = gw.charge(
        card(gw, CARD_THREE_DS),
        capture=capture,
        metadata={"order": "42"},
        three_ds={"redirect_endpoint": BACK},
    )
    token = three_ds_token(gw, charge["id"])
    assert token["payment_type"] == "card" and token["call_method"] == "http_post"
    assert token["content_type"] == "application/x-www-form-urlencoded; charset=UTF-8"
    page = submit(gw, token["issuer_token"], token["payload"])
    assert page.status_code == 200 and "Confirm your payment" in page.text
    answer = submit(gw, f"{token['issuer_token']}/answer", {**token["payload"], "result": "pass"})
    assert answer.status_code == 303
    location = urlsplit(answer.headers["Location"])
    assert location.path == "/payments/return/3ds/"
    query = parse_qs(location.query)
    assert query["serviceChargeId"] == [charge["id"]] and query["order"] == ["42"]
    assert query["shop"] == ["1"]
    assert gw.read(charge["id"])["status"] == ("successful" if capture else "authorized")
    again = gw.get(f"{BASE}/{charge['id']}/three_ds/issuer_token")
    assert again.status_code == 409


def test_failing_the_challenge_fails_the_charge(gw: Gw) -> None:
    charge = gw.charge(card(gw, CARD_THREE_DS), three_ds={"redirect_endpoint": BACK})
    token = three_ds_token(gw, charge["id"])
    answer = submit(gw, f"{token['issuer_token']}/answer", {**token["payload"], "result": "fail"})
    assert answer.status_code == 303
    read = gw.read(charge["id"])
    assert read["status"] == "failed" and read["error"]["code"] == 358


def test_the_challenge_refuses_altered_or_wrongly_encoded_payloads(gw: Gw) -> None:
    charge = gw.charge(card(gw, CARD_THREE_DS), three_ds={"redirect_endpoint": BACK})
    token = three_ds_token(gw, charge["id"])
    altered = submit(gw, token["issuer_token"], {**token["payload"], "signature": "0" * 32})
    assert altered.status_code == 400
    as_json = gw.post(token["issuer_token"].removeprefix(gw.base_url), json=token["payload"])
    assert as_json.status_code == 415
    assert gw.read(charge["id"])["status"] == "awaiting"


def test_no_3ds_token_for_other_charges(gw: Gw) -> None:
    plain = gw.charge()
    assert gw.get(f"{BASE}/{plain['id']}/three_ds/issuer_token").status_code == 409
    konbini = gw.charge(gw.token("konbini"))
    assert gw.get(f"{BASE}/{konbini['id']}/three_ds/issuer_token").status_code == 400


def test_without_a_redirect_endpoint_the_issuer_shows_the_result(gw: Gw) -> None:
    charge = gw.charge(card(gw, CARD_THREE_DS), three_ds={"mode": "force"})
    token = three_ds_token(gw, charge["id"])
    answer = submit(gw, f"{token['issuer_token']}/answer", {**token["payload"], "result": "pass"})
    assert answer.status_code == 200 and "successful" in answer.text
