"""The admin's created-date and amount range filters, and the CSV export of the filtered list."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from django_paycharge.models import Charge

from .conftest import charge_row

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:django_paycharge_charge_changelist")
EXPORT = reverse("admin:django_paycharge_charge_export")


@pytest.fixture
def charges():
    day = timezone.make_aware(datetime(2026, 3, 10, 12, 0))
    rows = [
        charge_row(requested_amount=500, created_on=day - timedelta(days=2)),
        charge_row(requested_amount=1500, created_on=day - timedelta(days=1)),
        charge_row(requested_amount=2500, created_on=day, requested_currency="USD"),
        charge_row(
            requested_amount=3500,
            created_on=day + timedelta(days=1),
            metadata={"order": "=HYPERLINK(1)", "名前": "山田"},
            merchant_transaction_id="+cmd",
        ),
    ]
    Charge.objects.bulk_create(rows)
    return rows


def exported(client, query=""):
    response = client.get(f"{EXPORT}{query}")
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeff")
    return list(csv.DictReader(io.StringIO(text[1:])))


def test_created_range_includes_both_days(admin_client, charges):
    response = admin_client.get(
        CHANGELIST, {"created_from": "2026-03-09", "created_to": "2026-03-10"}
    )
    assert response.status_code == 200
    shown = {c.requested_amount for c in response.context["cl"].result_list}
    assert shown == {1500, 2500}
    assert 'name="created_from" value="2026-03-09"' in response.content.decode()


def test_amount_range_and_other_filters_combine(admin_client, charges):
    response = admin_client.get(
        CHANGELIST, {"amount_min": "1000", "amount_max": "3000", "currency": "JPY"}
    )
    assert {c.requested_amount for c in response.context["cl"].result_list} == {1500}


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("created_from=yesterday&amount_min=2000", "“yesterday” is not a date (YYYY-MM-DD)"),
        ("amount_min=1.5&created_from=2026-03-10", "“1.5” is not a whole number of minor units"),
        ("amount_max=99999999999999999999&amount_min=2000", "“99999999999999999999” is not"),
    ],
)
def test_a_bad_bound_is_said_and_left_out_while_the_others_apply(
    admin_client, charges, query, said
):
    response = admin_client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200  # not a redirect that drops every filter
    html = response.content.decode()
    notices = [str(m) for m in response.context["messages"]]
    assert any(said in m for m in notices), notices
    assert html.count(said) == 2  # the message, and beside the filter's inputs
    assert 'aria-invalid="true"' in html
    # The good bound still filters.
    assert {c.requested_amount for c in response.context["cl"].result_list} == {2500, 3500}


def test_the_export_refuses_a_bad_bound_and_says_why_on_the_list(admin_client, charges):
    response = admin_client.get(f"{EXPORT}?amount_min=abc", follow=True)
    assert response.redirect_chain == [(f"{CHANGELIST}?amount_min=abc", 302)]
    notices = [str(m) for m in response.context["messages"]]
    assert notices == ["“abc” is not a whole number of minor units (yen, cents): the “requested "
                       "amount (minor units)” filter leaves it out."]  # fmt: skip


def test_the_export_has_the_filtered_rows_with_exact_amounts(admin_client, charges):
    rows = exported(admin_client, "?amount_min=2000")
    assert [r["requested_amount"] for r in rows] == ["3500", "2500"]  # newest first, as listed
    usd = rows[1]
    assert (usd["requested_currency"], usd["requested_decimal"]) == ("USD", "25.00")
    assert rows[0]["requested_decimal"] == "3500"  # JPY has no decimals
    assert rows[0]["merchant_transaction_id"] == "'+cmd"  # never a spreadsheet formula
    assert rows[0]["metadata"].startswith("{") and "山田" in rows[0]["metadata"]
    assert "raw" not in rows[0]


def test_the_export_link_carries_the_filters_and_drops_the_page(admin_client, charges):
    page = admin_client.get(CHANGELIST, {"amount_min": "2000"}).content.decode()
    assert f'href="{EXPORT}?amount_min=2000"' in page
    assert page.count("Export CSV") == 1
    response = admin_client.get(f"{EXPORT}?amount_min=2000&p=2")
    assert response.status_code == 302 and response["Location"] == f"{EXPORT}?amount_min=2000"


def test_the_export_needs_the_view_permission(client, staff_user, charges):
    client.force_login(staff_user())
    assert client.get(EXPORT).status_code == 403
    client.force_login(staff_user("view_charge"))
    assert len(exported(client)) == 4
