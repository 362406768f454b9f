"""The refund filters at scale: the charge's own ``refunds_total`` and a small partial index,
never the refunds table per charge."""

from __future__ import annotations

import pytest
from django.db import connection

from django_paycharge.models import Charge

from .conftest import charge_row
from .test_scale import changelist_queryset

pytestmark = pytest.mark.django_db

INDEX = "paycharge_charge_refunded"
REFUND_FILTERS = [
    {"refunds": "refunded"},
    {"refunds": "partially_refunded"},
    {"refunds": "partially_refunded", "created_from": "2000-01-01", "created_to": "2100-01-01"},
]


def refunded_share(n: int) -> int:
    """One charge in forty refunded in part, one in forty in full, the rest not at all."""
    return {0: 500, 20: 1000}.get(n % 40, 0)


@pytest.mark.parametrize("params", REFUND_FILTERS, ids=lambda p: ",".join(p))
def test_a_refund_filter_reads_the_partial_index_of_refunded_charges(admin_user, params):
    """Both the page and its capped count start from the refunded charges' index, on SQLite
    without statistics (Django never runs ANALYZE) and on PostgreSQL with them."""
    # The column written directly: this test is about the plan; the writer has its own.
    rows = [charge_row(charged_amount=1000, refunds_total=refunded_share(n)) for n in range(1200)]
    Charge.objects.bulk_create(rows, batch_size=1000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE django_paycharge_charge")
    queryset = changelist_queryset(admin_user, params)
    plan = queryset[:50].explain()
    count_plan = queryset.order_by().select_related(None).values("pk")[:10_001].explain()
    assert INDEX in plan, plan
    assert INDEX in count_plan, count_plan
    if connection.vendor == "sqlite":  # what the filters compare is in the index too
        assert f"USING COVERING INDEX {INDEX}" in count_plan, count_plan
    wanted = 1000 if params["refunds"] == "refunded" else 500
    expected = {row.pk for n, row in enumerate(rows) if refunded_share(n) == wanted}
    assert len(expected) == 30 and {c.pk for c in queryset} == expected


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's plans without statistics")
def test_status_mode_and_currency_are_counted_from_one_index_alone(admin_user):
    """Through the currency index alone the count read a row per charge of that currency."""
    rows = [
        charge_row(mode=("live", "test")[n % 2], status=("successful", "failed")[n % 3 // 2],
                   requested_currency=("USD", "JPY", "JPY", "EUR")[n % 4])
        for n in range(600)
    ]  # fmt: skip
    Charge.objects.bulk_create(rows)
    params = {"status__exact": "successful", "mode__exact": "live", "currency": "USD"}
    queryset = changelist_queryset(admin_user, params)
    count_plan = queryset.order_by().select_related(None).values("pk")[:10_001].explain()
    assert "USING COVERING INDEX paycharge_charge_mode_currency" in count_plan, count_plan
    assert "paycharge_charge_mode_currency" in queryset[:50].explain()
    expected = {
        r.pk for r in rows
        if (r.status, r.mode, r.requested_currency) == ("successful", "live", "USD")
    }  # fmt: skip
    assert expected and {c.pk for c in queryset} == expected
