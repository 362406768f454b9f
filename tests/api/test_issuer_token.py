from __future__ import annotations

import pytest

from django_paycharge.testing import TEST_JWT, TEST_SECRET

from .conftest import API, assert_error, gateway_charge, own

pytestmark = pytest.mark.django_db


def url(charge):
    return f"{API}/charges/{charge.gateway_id}/issuer_token/"


def test_the_owner_gets_an_online_token(gateway, anon):
    charge = gateway_charge(gateway, "online", call_method="http_post")
    response = own(anon, charge).get(url(charge))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["charge_id"] == str(charge.gateway_id)
    assert body["payment_type"] == "online"
    assert body["call_method"] == "http_post"
    assert body["issuer_token"].startswith("http")
    assert isinstance(body["payload"], dict)
    assert body["account_number"] is None and body["account_number_masked"] is False
    assert "raw" not in body


@pytest.fixture
def bank_charge(gateway):
    return gateway_charge(gateway, "bank_transfer")


def full_number(gateway, charge):
    answer = gateway.request(
        "GET", f"/stores/{charge.store_id}/charges/{charge.gateway_id}/issuer_token"
    )
    return answer.json()["account_number"]


def test_the_owner_gets_the_bank_account_masked(gateway, anon, bank_charge):
    response = own(anon, bank_charge).get(url(bank_charge))
    assert response.status_code == 200, response.content
    body = response.json()
    number = full_number(gateway, bank_charge)
    assert body["payment_type"] == "bank_transfer"
    assert body["account_number"] == "•" * (len(number) - 4) + number[-4:]
    assert body["account_number_masked"] is True
    assert body["branch_code"] and body["account_holder_name"]
    assert number not in response.content.decode()


def test_staff_without_the_permission_get_it_masked(gateway, staff, bank_charge):
    body = staff.get(url(bank_charge)).json()
    assert body["account_number_masked"] is True
    assert full_number(gateway, bank_charge) not in str(body)


def test_staff_with_the_permission_get_the_full_number(gateway, banker, bank_charge):
    body = banker.get(url(bank_charge)).json()
    assert body["account_number"] == full_number(gateway, bank_charge)
    assert body["account_number_masked"] is False


def test_bank_transfer_outside_awaiting_is_409_with_the_status(gateway, anon, bank_charge):
    gateway.complete(str(bank_charge.gateway_id))
    response = own(anon, bank_charge).get(url(bank_charge))
    body = assert_error(response, 409, "charge_status")
    assert body["status"] == "successful"
    assert "Successful" in body["message"]  # the label; "status" keeps the code


def test_konbini_is_409_unsupported(gateway, staff):
    charge = gateway_charge(gateway, "konbini")
    body = assert_error(staff.get(url(charge)), 409, "unsupported_payment_type")
    assert "konbini" in body["message"]


def test_a_card_not_awaiting_3ds_is_409_charge_status(gateway, staff):
    # A card's only issuer token is its 3-D Secure one, while it awaits the customer.
    body = assert_error(staff.get(url(gateway_charge(gateway, "card"))), 409, "charge_status")
    assert body["status"] == "successful"


@pytest.mark.parametrize("who", ["anon", "customer"])
def test_non_owners_get_404_and_the_gateway_is_not_called(gateway, request, who, bank_charge):
    before = len(gateway.requests_log)
    assert_error(request.getfixturevalue(who).get(url(bank_charge)), 404, "not_found")
    assert len(gateway.requests_log) == before


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        ({"action": "status", "status": 500}, 502, "gateway_error"),
        ({"action": "status", "status": 404}, 404, "not_found"),
        ({"action": "status", "status": 429}, 503, "gateway_rate_limited"),
        ({"action": "drop_before"}, 503, "gateway_unavailable"),
    ],
)
def test_gateway_failures_are_mapped(gateway, staff, fault, status, code):
    charge = gateway_charge(gateway, "online")
    gateway.add_fault("GET", r"/issuer_token$", **fault)
    assert_error(staff.get(url(charge)), status, code)


def test_no_answer_ever_carries_the_app_token(gateway, banker, bank_charge):
    for path in (url(bank_charge), f"{API}/charges/", f"{API}/charges/{bank_charge.gateway_id}/"):
        text = banker.get(path).content.decode()
        assert TEST_SECRET not in text and TEST_JWT not in text
