from __future__ import annotations

import pytest

from .conftest import API, assert_error, mirror_charges

pytestmark = pytest.mark.django_db
URL = f"{API}/charges/"


def ids(response):
    return [item["id"] for item in response.json()["items"]]


def test_anonymous_may_not_list(anon):
    mirror_charges(2)
    response = anon.get(URL)
    # Session authentication first (DRF default): 403, with its own code.
    assert_error(response, 403, "not_authenticated")


def test_a_customer_may_not_list(customer):
    mirror_charges(2)
    assert_error(customer.get(URL), 403, "permission_denied")


def test_staff_list_newest_first_with_default_page_of_ten(staff):
    charges = mirror_charges(12)
    response = staff.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert ids(response) == [str(c.gateway_id) for c in reversed(charges)][:10]
    assert body["has_more"] is True
    assert "raw" not in body["items"][0]
    assert "raw-payload-marker" not in response.content.decode()
    assert body["items"][0]["fee_amount"] == 3  # staff see the merchant's fee


@pytest.mark.parametrize("limit", ["9", "101", "0", "-10", "abc", "10.5", "", "1e2"])
def test_limit_out_of_bounds_is_400_naming_limit(staff, limit):
    assert_error(staff.get(URL, {"limit": limit}), 400, "validation_error", "limit")


@pytest.mark.parametrize("limit", [10, 100])
def test_limit_bounds_are_inclusive(staff, limit):
    mirror_charges(101)
    response = staff.get(URL, {"limit": limit})
    assert response.status_code == 200
    assert len(ids(response)) == limit
    assert response.json()["has_more"] is True


def test_bad_cursor_and_direction_are_400_naming_them(staff):
    assert_error(staff.get(URL, {"cursor": "nope"}), 400, "validation_error", "cursor")
    unknown = "6b0c6a3c-3b7e-4a8e-9a57-000000000000"
    assert_error(staff.get(URL, {"cursor": unknown}), 400, "validation_error", "cursor")
    assert_error(
        staff.get(URL, {"cursor_direction": "up"}), 400, "validation_error", "cursor_direction"
    )


@pytest.mark.parametrize("direction", ["desc", "asc"])
@pytest.mark.parametrize("same_time", [False, True])
def test_cursor_walks_every_charge_once_in_order(staff, direction, same_time):
    charges = mirror_charges(25, same_time=same_time)
    seen: list[str] = []
    params = {"limit": 10, "cursor_direction": direction}
    while True:
        response = staff.get(URL, params)
        assert response.status_code == 200
        page = ids(response)
        seen += page
        if not response.json()["has_more"]:
            break
        params["cursor"] = page[-1]  # exclusive: the next page starts after it
    expected = [str(c.gateway_id) for c in charges]  # created in order (then by pk)
    assert seen == (expected if direction == "asc" else expected[::-1])


def test_last_page_says_no_more(staff):
    charges = mirror_charges(10)
    response = staff.get(URL, {"limit": 10})
    assert len(ids(response)) == 10
    assert response.json()["has_more"] is False
    after_last = staff.get(URL, {"cursor": str(charges[0].gateway_id)})
    assert after_last.json() == {"items": [], "has_more": False}
