from __future__ import annotations

import json

import pytest
from django.db import connection
from rest_framework.test import APIClient

from django_paycharge.models import Charge, ChargeRequest

from .conftest import API, assert_error, own

pytestmark = pytest.mark.django_db
URL = f"{API}/charges/"
STOREFRONT = {
    "API_CREATE_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "API_CHARGE_HOOK": "tests.api.hooks.order_amount",
}


@pytest.fixture
def token(gateway):
    return gateway.create_transaction_token("card")["id"]


@pytest.fixture
def storefront(settings, gateway):
    """The documented storefront pattern: anyone may create, the hook sets the amount."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, **STOREFRONT}


def post(client, body):
    return client.post(URL, json.dumps(body), content_type="application/json")


def sent_charges(gateway):
    return [r for r in gateway.requests_log if r["method"] == "POST" and r["path"] == "/charges"]


# -- who may create -------------------------------------------------------------------------


def test_anonymous_may_not_create_by_default(anon, gateway, token):
    body = {"transaction_token_id": token, "amount": 1, "currency": "JPY"}
    assert_error(post(anon, body), 403, "not_authenticated")
    assert sent_charges(gateway) == []


def test_a_customer_may_not_create_by_default(customer, gateway, token):
    body = {"transaction_token_id": token, "amount": 1, "currency": "JPY"}
    assert_error(post(customer, body), 403, "permission_denied")
    assert sent_charges(gateway) == []


def test_staff_create_with_their_own_amount(staff, gateway, token):
    response = post(staff, {"transaction_token_id": token, "amount": 2500, "currency": "jpy"})
    assert response.status_code == 201, response.content
    body = response.json()
    charge = Charge.objects.get()
    assert body["id"] == str(charge.gateway_id)
    assert body["requested_amount"] == 2500
    assert body["requested_currency"] == "JPY"
    assert body["status"] == "pending"
    assert "raw" not in body
    assert gateway.charges[body["id"]]["requested_amount"] == 2500
    # The creating session now owns the charge.
    assert staff.session["paycharge_charges"] == [body["id"]]


def test_staff_without_amount_and_without_hook_get_400_naming_amount(staff, gateway, token):
    response = post(staff, {"transaction_token_id": token})
    assert_error(response, 400, "validation_error", "amount", "currency")
    assert sent_charges(gateway) == []


def test_storefront_hook_sets_the_amount_and_the_session_owns_the_charge(anon, storefront, token):
    response = post(anon, {"transaction_token_id": token, "reference": "B-2"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["requested_amount"], body["requested_currency"]) == (990, "USD")
    assert body["metadata"] == {"order": "B-2"}
    assert body["fee_amount"] is None and body["account"] is None  # not staff
    detail = anon.get(f"{URL}{body['id']}/")
    assert detail.status_code == 200
    assert detail.json()["id"] == body["id"]
    stranger = type(anon)()
    assert_error(stranger.get(f"{URL}{body['id']}/"), 404, "not_found")


def test_a_customer_may_not_send_an_amount(anon, storefront, gateway, token):
    body = {"transaction_token_id": token, "reference": "A-1", "amount": 1, "currency": "JPY"}
    assert_error(post(anon, body), 400, "validation_error", "amount", "currency")
    assert sent_charges(gateway) == []


def test_staff_may_still_use_the_hook(staff, storefront, token):
    response = post(staff, {"transaction_token_id": token, "reference": "A-1"})
    assert response.status_code == 201
    assert response.json()["requested_amount"] == 1500


def test_the_hook_may_refuse_with_a_validation_error(anon, storefront, gateway, token):
    response = post(anon, {"transaction_token_id": token, "reference": "nope"})
    assert_error(response, 400, "validation_error", "reference")
    assert sent_charges(gateway) == []


@pytest.mark.parametrize(
    "hook", [None, "tests.api.hooks.not_a_dict", "tests.api.hooks.no_currency"]
)
def test_a_missing_or_broken_hook_is_503_not_500(anon, settings, gateway, token, hook):
    settings.PAYCHARGE = {**settings.PAYCHARGE, **STOREFRONT, "API_CHARGE_HOOK": hook}
    response = post(anon, {"transaction_token_id": token, "reference": "A-1"})
    body = assert_error(response, 503, "not_configured")
    assert "API_CHARGE_HOOK" not in body["message"]  # configuration details stay in the log
    assert response["Retry-After"] == "30"
    assert sent_charges(gateway) == []


def test_a_hook_amount_breaking_the_rules_is_refused_before_sending(anon, settings, gateway, token):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        **STOREFRONT,
        "API_CHARGE_HOOK": "tests.api.hooks.bad_amount",
    }
    response = post(anon, {"transaction_token_id": token, "reference": "A-1"})
    assert_error(response, 400, "validation_error", "amount")
    assert sent_charges(gateway) == []


# -- every validation rule ------------------------------------------------------------------

TOKEN = "3f1e4d2c-1b0a-4f9e-8d7c-6b5a49382716"
GOOD = {"transaction_token_id": TOKEN, "amount": 1000, "currency": "JPY"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"transaction_token_id": None}, "transaction_token_id"),
        ({"transaction_token_id": "not-a-uuid"}, "transaction_token_id"),
        ({"transaction_token_id": 12}, "transaction_token_id"),
        ({"amount": 0}, "amount"),
        ({"amount": -5}, "amount"),
        ({"amount": "1000"}, "amount"),
        ({"amount": 10.5}, "amount"),
        ({"amount": True}, "amount"),
        ({"amount": 2**63}, "amount"),
        ({"currency": "JP"}, "currency"),
        ({"currency": "J1Y"}, "currency"),
        ({"currency": 392}, "currency"),
        ({"capture": "yes"}, "capture"),
        ({"capture": 1}, "capture"),
        ({"capture_at": "2030-01-01T00:00:00"}, "capture_at"),
        ({"capture_at": "tomorrow"}, "capture_at"),
        ({"merchant_transaction_id": ""}, "merchant_transaction_id"),
        ({"merchant_transaction_id": "a\nb"}, "merchant_transaction_id"),
        ({"merchant_transaction_id": "x" * 256}, "merchant_transaction_id"),
        ({"merchant_transaction_id": 7}, "merchant_transaction_id"),
        ({"client_metadata": {"ip_address": "::1"}}, "client_metadata.ip_address"),
        ({"client_metadata": {"ip_address": "999.1.1.1"}}, "client_metadata.ip_address"),
        ({"client_metadata": "1.2.3.4"}, "client_metadata"),
        ({"client_metadata": {"ip": "1.2.3.4"}}, "client_metadata.ip"),
        ({"metadata": ["a"]}, "metadata"),
        ({"metadata": {"nested": {"a": 1}}}, "metadata.nested"),
        ({"metadata": {"": 1}}, "metadata"),
        ({"metadata": {"a": "nul\x00"}}, "metadata"),
        ({"redirect": {"endpoint": "ftp://shop.example/back"}}, "redirect.endpoint"),
        ({"redirect": {"endpoint": "/relative"}}, "redirect.endpoint"),
        ({"redirect": {"endpoint": "javascript:alert(1)"}}, "redirect.endpoint"),
        ({"three_ds": {"redirect_endpoint": "shop.example"}}, "three_ds.redirect_endpoint"),
        ({"three_ds": {"mode": "sometimes"}}, "three_ds.mode"),
        ({"three_ds": {"mode": "normal", "extra": 1}}, "three_ds.extra"),
        ({"reference": 5}, "reference"),
        ({"reference": "r" * 256}, "reference"),
        ({"amout": 1000}, "amout"),
    ],
)
def test_each_bad_input_is_400_naming_the_field(staff, gateway, change, field):
    response = post(staff, {**GOOD, **change})
    assert_error(response, 400, "validation_error", field)
    assert sent_charges(gateway) == []
    assert ChargeRequest.objects.count() == 0


def test_every_broken_field_is_named_at_once(staff, gateway):
    body = {"transaction_token_id": "x", "amount": -1, "currency": "?", "three_ds": {"mode": 1}}
    response = post(staff, body)
    assert_error(
        response,
        400,
        "validation_error",
        "transaction_token_id",
        "amount",
        "currency",
        "three_ds.mode",
    )


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "null"])
def test_a_body_that_is_not_an_object_is_400(staff, gateway, raw):
    response = staff.post(URL, raw, content_type="application/json")
    assert_error(response, 400, "validation_error", "non_field_errors")


def test_malformed_json_is_400_parse_error(staff, gateway):
    response = staff.post(URL, "{not json", content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_form_encoded_bodies_are_refused(staff, gateway):
    response = staff.post(URL, {"transaction_token_id": TOKEN})
    assert_error(response, 415, "unsupported_media_type")


def test_all_optional_fields_reach_the_gateway(staff, gateway, token):
    body = {
        **GOOD,
        "transaction_token_id": token,
        "capture": True,
        "merchant_transaction_id": "order-77",
        "client_metadata": {"ip_address": "203.0.113.9"},
        "metadata": {"order": "77", "gift": False, "weight": 1.5},
        "redirect": {"endpoint": "https://shop.example/back?x=1"},
        "three_ds": {"redirect_endpoint": "https://shop.example/3ds", "mode": "require"},
    }
    response = post(staff, body)
    assert response.status_code == 201, response.content
    [request] = sent_charges(gateway)
    sent = {"body": json.loads(request["body"])}
    assert sent["body"]["client_metadata"] == {"ip_address": "203.0.113.9"}
    assert sent["body"]["three_ds"] == {
        "redirect_endpoint": "https://shop.example/3ds",
        "mode": "require",
    }
    assert sent["body"]["merchant_transaction_id"] == "order-77"


# -- gateway failures mapped ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        ({"action": "status", "status": 400}, 400, "gateway_validation_error"),
        ({"action": "status", "status": 404}, 404, "not_found"),
        ({"action": "status", "status": 409}, 409, "gateway_conflict"),
        # No answer says whether the charge was made: never "failed", never a 500.
        ({"action": "status", "status": 429, "retry_after": 1}, 503, "charge_outcome_unknown"),
        ({"action": "status", "status": 500}, 503, "charge_outcome_unknown"),
        ({"action": "status", "status": 503}, 503, "charge_outcome_unknown"),
        ({"action": "drop_before"}, 503, "charge_outcome_unknown"),
        # The shop's settings: its owner is told; the caller that nothing was charged.
        ({"action": "status", "status": 401}, 503, "payments_unavailable"),
        ({"action": "status", "status": 403}, 503, "payments_unavailable"),
    ],
)
def test_gateway_failures_are_mapped_never_500(staff, gateway, token, fault, status, code):
    gateway.add_fault("POST", r"^/charges$", **fault)
    response = post(staff, {**GOOD, "transaction_token_id": token})
    assert_error(response, status, code)
    if code == "payments_unavailable":
        assert response["Retry-After"] == "30"
        assert response.json()["message"] == (
            "Payments are unavailable right now; you were not charged."
        )
    elif status == 503:
        assert response["Retry-After"] == "30"
        assert "Do not pay again" in response.json()["message"]


@pytest.mark.parametrize("fault", [{"action": "drop_after"}, {"action": "malformed"}])
def test_a_charge_made_behind_a_lost_or_broken_answer_is_found_and_returned(
    staff, gateway, token, fault
):
    gateway.add_fault("POST", r"^/charges$", **fault)
    response = post(staff, {**GOOD, "transaction_token_id": token})
    assert response.status_code == 201, response.content
    assert list(gateway.charges) == [response.json()["id"]]


def test_the_gateways_field_errors_are_passed_on(staff, gateway, token):
    gateway.add_fault(
        "POST",
        r"^/charges$",
        action="status",
        status=400,
        body={
            "status": "error",
            "code": "VALIDATION_ERROR",
            "errors": [{"field": "merchant_transaction_id", "reason": "TOO_LONG"}],
        },
    )
    response = post(staff, {**GOOD, "transaction_token_id": token})
    body = assert_error(response, 400, "gateway_validation_error", "merchant_transaction_id")
    assert body["errors"] == [{"field": "merchant_transaction_id", "reason": "TOO_LONG"}]


# -- throttling and transactions ------------------------------------------------------------


def test_create_is_throttled_with_retry_after(staff, gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "API_CREATE_THROTTLE_RATE": "2/minute"}
    for _ in range(2):
        token = gateway.create_transaction_token("card")["id"]
        assert post(staff, {**GOOD, "transaction_token_id": token}).status_code == 201
    token = gateway.create_transaction_token("card")["id"]
    response = post(staff, {**GOOD, "transaction_token_id": token})
    assert_error(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0
    assert len(sent_charges(gateway)) == 2
    # Reads are not throttled by the create scope.
    assert staff.get(URL).status_code == 200


def test_throttling_can_be_turned_off(staff, gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "API_CREATE_THROTTLE_RATE": None}
    for _ in range(3):
        token = gateway.create_transaction_token("card")["id"]
        assert post(staff, {**GOOD, "transaction_token_id": token}).status_code == 201


@pytest.fixture
def atomic_requests():
    connection.settings_dict["ATOMIC_REQUESTS"] = True
    yield
    connection.settings_dict["ATOMIC_REQUESTS"] = False


def test_create_runs_outside_atomic_requests(staff, gateway, token, atomic_requests):
    # create_charge commits its request row in a durable block, which fails inside a
    # request-wide transaction: the view must opt out of ATOMIC_REQUESTS.
    response = post(staff, {**GOOD, "transaction_token_id": token})
    assert response.status_code == 201, response.content


def test_the_owner_session_keeps_earlier_charges(anon, storefront, gateway):
    first = gateway.create_transaction_token("card")["id"]
    second = gateway.create_transaction_token("card")["id"]
    a = post(anon, {"transaction_token_id": first, "reference": "A-1"}).json()["id"]
    b = post(anon, {"transaction_token_id": second, "reference": "A-1"}).json()["id"]
    assert anon.session["paycharge_charges"] == [a, b]
    # The tests' helper writes what the endpoint writes, so tests that use it hold.
    helped = own(APIClient(), Charge.objects.get(gateway_id=a))
    assert own(helped, Charge.objects.get(gateway_id=b)).session["paycharge_charges"] == [a, b]
