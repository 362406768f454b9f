"""Issuer tokens per payment type and status, and the fake provider page."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

from django_paycharge.testing import TEST_STORE_ID

from .conftest import Gw


def _issuer(gw: Gw, charge_id: str) -> requests.Response:
    return gw.get(f"/stores/{TEST_STORE_ID}/charges/{charge_id}/issuer_token")


@pytest.mark.parametrize("call_method", ["http_post", "http_get", "sdk", "app", "web"])
def test_online_issuer_token(gw: Gw, call_method: str) -> None:
    charge = gw.charge(gw.token("online", brand="paypay", call_method=call_method))
    body = _issuer(gw, charge["id"]).json()
    assert body["payment_type"] == "online"
    assert body["call_method"] == call_method
    assert body["payload"] and all(isinstance(v, str) for v in body["payload"].values())
    if call_method.startswith("http_"):
        assert body["issuer_token"] == f"{gw.base_url}/_fake/provider/{charge['id']}"
    else:
        assert isinstance(body["issuer_token"], str) and body["issuer_token"]


def test_bank_transfer_issuer_token_only_while_awaiting(gw: Gw) -> None:
    charge = gw.charge(gw.token("bank_transfer"))
    body = _issuer(gw, charge["id"]).json()
    assert set(body) == {
        "payment_type",
        "account_id",
        "branch_code",
        "branch_name",
        "account_holder_name",
        "account_number",
    }
    gw.handle.complete(charge["id"])
    answer = _issuer(gw, charge["id"])
    assert answer.status_code == 409
    assert answer.json()["code"] == "INVALID_CHARGE_STATUS"
    assert answer.json()["errors"][0]["reason"] == "successful"


def test_bank_transfer_pending_is_refused() -> None:
    from django_paycharge.testing import FakeGateway

    gateway = FakeGateway()
    gateway.processing_delay = 60
    charge = gateway.create_charge(gateway.create_transaction_token("bank_transfer")["id"])
    answer = gateway.request("GET", f"/stores/{TEST_STORE_ID}/charges/{charge['id']}/issuer_token")
    assert answer.status == 409 and answer.json()["errors"][0]["reason"] == "pending"


@pytest.mark.parametrize("payment_type", ["card", "konbini"])
def test_card_and_konbini_have_no_issuer_token(gw: Gw, payment_type: str) -> None:
    answer = _issuer(gw, gw.charge(gw.token(payment_type))["id"])
    assert answer.status_code == 400
    assert answer.json()["code"] == "UNSUPPORTED_PAYMENT_TYPE"


def _online(
    gw: Gw, call_method: str = "http_post", **fields: object
) -> tuple[dict[str, object], dict[str, str], str]:
    charge = gw.charge(gw.token("online", brand="paypay", call_method=call_method), **fields)
    body = _issuer(gw, str(charge["id"])).json()
    return charge, body["payload"], body["issuer_token"]


def test_provider_post_pays_and_redirects_with_merged_query(gw: Gw) -> None:
    charge, payload, url = _online(
        gw,
        metadata={"order": "A 1", "qty": 2},
        redirect={"endpoint": "https://shop.example/return?lang=ja"},
    )
    answer = requests.post(url, data=payload, allow_redirects=False, timeout=10)
    assert answer.status_code == 303
    location = urlsplit(answer.headers["Location"])
    assert (location.scheme, location.netloc, location.path) == ("https", "shop.example", "/return")
    query = dict(parse_qsl(location.query))
    assert query == {
        "lang": "ja",
        "serviceChargeId": charge["id"],
        "serviceTokenId": charge["transaction_token_id"],
        "order": "A 1",
        "qty": "2",
    }
    assert gw.read(str(charge["id"]))["status"] == "successful"
    [seen] = gw.handle.provider_log
    assert seen["method"] == "POST"
    assert seen["content_type"] == "application/x-www-form-urlencoded"
    assert seen["fields"] == payload


def test_provider_get_pays(gw: Gw) -> None:
    charge, payload, url = _online(gw, "http_get", redirect={"endpoint": "https://shop.example/r"})
    answer = requests.get(url, params=payload, allow_redirects=False, timeout=10)
    assert answer.status_code == 303
    assert gw.read(str(charge["id"]))["status"] == "successful"
    assert gw.handle.provider_log[0]["method"] == "GET"


def test_provider_without_redirect_renders_a_page(gw: Gw) -> None:
    _, payload, url = _online(gw)
    answer = requests.post(url, data=payload, timeout=10)
    assert answer.status_code == 200
    assert "Payment complete" in answer.text


def test_provider_rejects_json_and_altered_payloads(gw: Gw) -> None:
    charge, payload, url = _online(gw)
    assert requests.post(url, json=payload, timeout=10).status_code == 415
    assert requests.post(url, data={**payload, "amount": "1"}, timeout=10).status_code == 400
    assert requests.post(url, data={"other": "1"}, timeout=10).status_code == 400
    assert gw.read(str(charge["id"]))["status"] == "awaiting"


def test_provider_fail_and_cancel(gw: Gw) -> None:
    failed, payload, url = _online(gw)
    requests.post(url, data={**payload, "action": "fail"}, timeout=10)
    assert gw.read(str(failed["id"]))["status"] == "failed"
    canceled, _, url = _online(gw, redirect={"endpoint": "https://shop.example/r"})
    answer = requests.get(url + "/cancel", allow_redirects=False, timeout=10)
    assert answer.status_code == 303
    assert gw.read(str(canceled["id"]))["status"] == "canceled"
