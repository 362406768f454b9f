"""PostgreSQL writes the export's first cells itself: the same text as Python's, cell by cell."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from django_paycharge.admin import export
from django_paycharge.models import Charge, Refund

from .conftest import charge_row

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass"),
]

ODD_TEXTS = ["=1+1", "+cmd", "-2", "@x", "\tt", "\rr", 'a "quoted", cell', "two\nlines", "", "名前"]
CURRENCIES = ["JPY", "USD", "usd", "BHD", "CLF", "", None, "X", "KWD"]
METADATA = [
    {},
    None,
    {"b": 1, "aa": 2, "Z": -30, "é": True, "z": None},  # keys: code points, not lengths
    {"=x": "-1", "名前": "山田", "c": "\u0001\t\\"},
    [1, 2],
    "=cmd",
    5,
    1.5,
    {"n": 'a\n"q",', "deep": {"b": 1, "a": [2.50, "x"]}},
    {"k": 1.25, "big": 10**20},
]


@pytest.fixture
def odd_charges():
    at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    rows = []
    for n in range(max(len(ODD_TEXTS), len(CURRENCIES), len(METADATA))):
        text = ODD_TEXTS[n % len(ODD_TEXTS)]
        currency = CURRENCIES[n % len(CURRENCIES)]
        rows.append(
            charge_row(
                account=text or "default",
                store_id=None if n % 3 == 0 else uuid.uuid4(),
                status=["successful", "failed", text, None][n % 4],
                mode=text or None,
                payment_type=text,
                created_on=at + timedelta(minutes=n, microseconds=0 if n % 2 else 123456 * n),
                requested_amount=[0, -1050, 10**15 + 7, None][n % 4],
                requested_currency=currency,
                charged_amount=[1050, None, 3, 999999][n % 4],
                charged_currency=CURRENCIES[(n + 1) % len(CURRENCIES)],
                fee_amount=[None, 5, -3, 0][n % 4],
                fee_currency=currency,
                merchant_transaction_id=text or None,
                transaction_token_id=None if n % 2 else uuid.uuid4(),
                metadata=METADATA[n % len(METADATA)],
            )
        )
    Charge.objects.bulk_create(rows)
    # Refunded in full, in part, and one whose refund is not final yet.
    charges = list(Charge.objects.filter(status="successful", charged_amount__isnull=False))
    for charge, (amount, status) in zip(
        charges, [(1050, "successful"), (1, "successful"), (2, "pending")], strict=False
    ):
        Refund.objects.create(
            gateway_id=uuid.uuid4(),
            charge=charge,
            amount=amount,
            status=status,
            synced_at=at,
            first_seen_at=at,
        )
    return rows


def _python_lines(queryset):
    """Every cell written by Python: the path of databases other than PostgreSQL."""
    vendor = connection.vendor
    try:
        connection.vendor = "python"
        return "".join(export.lines(queryset))
    finally:
        connection.vendor = vendor


def test_postgresql_writes_the_same_csv_as_python(odd_charges):
    queryset = Charge.objects.order_by("-created_on", "-id")
    copied = "".join(export.lines(queryset))
    written = _python_lines(queryset)
    assert copied.splitlines() == written.splitlines()
    assert copied == written
    rows = list(csv.DictReader(io.StringIO(copied)))
    assert len(rows) == len(odd_charges)
    # Never a formula, wherever an odd text landed; decimals with the currency's places.
    for cell in (r[c] for r in rows for c in ("account", "mode", "merchant_transaction_id")):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert {r["requested_decimal"] for r in rows} >= {"0", "-10.50", "0.0000", "0.000", "-1050"}
    assert any(r["refund_state"] == "refunded" for r in rows)
    assert any(r["refund_state"] == "partially_refunded" for r in rows)


def test_a_filtered_export_is_the_same_both_ways(odd_charges):
    queryset = Charge.objects.filter(requested_currency__in=["USD", "JPY"]).order_by("pk")
    copied = "".join(export.lines(queryset))
    assert copied == _python_lines(queryset)
    assert len(copied.splitlines()) == 1 + queryset.count()
