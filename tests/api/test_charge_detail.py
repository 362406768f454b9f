from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from .conftest import API, assert_error, mirror_charges, own

pytestmark = pytest.mark.django_db


def url(charge):
    return f"{API}/charges/{charge.gateway_id}/"


def test_the_owner_session_sees_its_charge_without_merchant_details(anon):
    [charge] = mirror_charges(1)
    response = own(anon, charge).get(url(charge))
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(charge.gateway_id)
    assert body["requested_amount"] == charge.requested_amount
    assert body["fee_amount"] is None and body["account"] is None
    assert "raw" not in body and "raw-payload-marker" not in response.content.decode()


def test_an_owner_who_is_logged_in_sees_it_too(customer):
    [charge] = mirror_charges(1)
    assert own(customer, charge).get(url(charge)).status_code == 200


@pytest.mark.parametrize("who", ["anon", "customer"])
def test_anyone_else_gets_404(request, who):
    charge, other = mirror_charges(2)
    client = request.getfixturevalue(who)
    own(client, other)
    assert_error(client.get(url(charge)), 404, "not_found")


def test_staff_see_every_charge_with_merchant_details(staff):
    [charge] = mirror_charges(1)
    body = staff.get(url(charge)).json()
    assert body["fee_amount"] == 3
    assert body["account"] == "default"


@pytest.mark.parametrize("charge_id", ["6b0c6a3c-3b7e-4a8e-9a57-000000000000", "not-a-uuid"])
def test_unknown_ids_are_404_in_the_api_shape(staff, charge_id):
    assert_error(staff.get(f"{API}/charges/{charge_id}/"), 404, "not_found")


def test_methods_other_than_get_are_405(staff):
    [charge] = mirror_charges(1)
    assert_error(staff.delete(url(charge)), 405, "method_not_allowed")
    assert_error(staff.put(url(charge), {}, format="json"), 405, "method_not_allowed")


def test_the_shops_global_exception_handler_is_not_used_here(staff, settings):
    # A shop-wide handler must not reshape (or be reshaped by) the payment API.
    settings.REST_FRAMEWORK = {"EXCEPTION_HANDLER": "tests.api.test_charge_detail.shop_handler"}
    assert_error(staff.get(f"{API}/charges/nope/"), 404, "not_found")


def shop_handler(exc, context):
    raise AssertionError("the shop's handler was called")


def test_csrf_is_enforced_for_session_users(db):
    # The session cookie alone must not let another site create charges.
    from django.contrib.auth.models import User

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(User.objects.create(username="s", is_staff=True))
    response = client.post(f"{API}/charges/", {}, format="json")
    assert_error(response, 403, "permission_denied")
    assert "CSRF" in response.json()["message"]
