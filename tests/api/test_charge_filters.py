"""Filters of the charge list: status, mode, currency, payment type, created and amount
ranges, metadata; bad values answer 400 naming the parameter."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest

from django_paycharge.models import Charge

from .conftest import API, assert_error, mirror_charges

pytestmark = pytest.mark.django_db
URL = f"{API}/charges/"


def amounts(response):
    assert response.status_code == 200, response.content
    return sorted(item["requested_amount"] for item in response.json()["items"])


@pytest.fixture
def charges():
    made = mirror_charges(6)  # amounts 100..105, created a minute apart
    shapes = [
        ("successful", "live", "JPY", "card", {"order": "A-1"}),
        ("failed", "test", "JPY", "card", {"order": "A-2"}),
        ("awaiting", "live", "USD", "bank_transfer", {"order": 7}),
        ("successful", "test", "USD", "konbini", {"order": "A-1", "shop": "north"}),
        ("canceled", "live", "EUR", "card", {}),
        ("successful", "live", "JPY", "", {"order": "7"}),
    ]
    for charge, (status, mode, currency, payment_type, metadata) in zip(made, shapes, strict=True):
        Charge.objects.filter(pk=charge.pk).update(
            status=status,
            mode=mode,
            requested_currency=currency,
            payment_type=payment_type,
            metadata=metadata,
        )
    return made


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=successful", [100, 103, 105]),
        ("status=successful&status=failed", [100, 101, 103, 105]),
        ("mode=test", [101, 103]),
        ("currency=usd", [102, 103]),
        ("payment_type=card", [100, 101, 104]),
        ("amount_min=102&amount_max=104", [102, 103, 104]),
        ("metadata=order:A-1", [100, 103]),
        ("metadata=order:A-1&metadata=shop:north", [103]),
        ("metadata=order:7", [102, 105]),  # the number 7 and the string "7"
        ("status=successful&currency=JPY&mode=live", [100, 105]),
    ],
)
def test_filters_narrow_the_list(staff, charges, query, expected):
    assert amounts(staff.get(f"{URL}?{query}&limit=100")) == expected


def test_created_range_is_after_inclusive_before_exclusive(staff, charges):
    start = charges[1].created_on.isoformat()
    end = charges[4].created_on.isoformat()
    response = staff.get(URL, {"created_after": start, "created_before": end})
    assert amounts(response) == [101, 102, 103]


def test_a_created_range_in_an_offset_postgresql_cannot_hold_is_the_same_instants(staff, charges):
    """ISO-8601 allows offsets up to 23:59, PostgreSQL only up to 15:59."""
    far = timezone(-timedelta(hours=23, minutes=45))
    start = charges[1].created_on.astimezone(far).isoformat()
    end = charges[4].created_on.astimezone(far).isoformat()
    response = staff.get(URL, {"created_after": start, "created_before": end})
    assert amounts(response) == [101, 102, 103]


def test_filters_and_the_cursor_walk_together(staff, charges):
    first = staff.get(URL, {"status": "successful", "limit": 10, "cursor_direction": "asc"})
    assert amounts(first) == [100, 103, 105]
    cursor = first.json()["items"][0]["id"]
    rest = staff.get(URL, {"status": "successful", "cursor": cursor, "cursor_direction": "asc"})
    assert amounts(rest) == [103, 105]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=paid", "status"),
        ("mode=sandbox", "mode"),
        ("created_after=yesterday", "created_after"),
        ("amount_min=ten", "amount_min"),
        ("currency=YENS", "currency"),
        ("metadata=no-colon", "metadata"),
        ("metadata=bad key:1", "metadata"),
    ],
)
def test_bad_filter_values_are_400_naming_the_parameter(staff, charges, query, field):
    assert_error(staff.get(f"{URL}?{query}"), 400, "validation_error", field)


def test_an_empty_filter_is_no_filter(staff, charges):
    assert len(amounts(staff.get(URL, {"status": "", "currency": "", "limit": 100}))) == 6
