"""PostgreSQL writes the export's lines itself: the same cells as Python's, quoted alike."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from django_paycharge import services
from django_paycharge.admin import export
from django_paycharge.models import Charge, Refund

from .conftest import charge_row

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass"),
]

ODD_TEXTS = ["=1+1", "+cmd", "-2", "@x", "\tt", "\rr", 'a "quoted", cell', "two\nlines", "", "名前"]
CURRENCIES = ["JPY", "JPY", "USD", "usd", "BHD", "CLF", "", None, "X", "KWD", "=1", "-1", "\tA"]
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
    -5,
    -0.5,
    "-x",
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
    services.recount_refunds_total()  # refunds written here, not by the app: counted again
    return rows


def _python_lines(queryset):
    """Every cell written by Python: the path of databases other than PostgreSQL."""
    vendor = connection.vendor
    try:
        connection.vendor = "python"
        return b"".join(export.lines(queryset)).decode()
    finally:
        connection.vendor = vendor


METADATA_COLUMN = export.header().index("metadata")


def _same_but_the_metadata_text(copied, written):
    """Both CSV texts hold the same cells, and quote and end lines alike; the metadata is
    the same JSON value, neutralised alike (PostgreSQL's text of it orders keys its way)."""
    copied_rows = list(csv.reader(io.StringIO(copied)))
    written_rows = list(csv.reader(io.StringIO(written)))
    assert len(copied_rows) == len(written_rows)
    for ours, theirs in zip(copied_rows[1:], written_rows[1:], strict=True):
        mine, other = ours[METADATA_COLUMN], theirs[METADATA_COLUMN]
        if mine != other:  # an object or an array, keys in another order
            assert json.loads(mine) == json.loads(other), (mine, other)
        theirs[METADATA_COLUMN] = mine
    # Python's writer, given PostgreSQL's metadata text, writes PostgreSQL's very bytes.
    assert "".join(export._line(cells) for cells in written_rows) == copied


def test_postgresql_writes_the_same_csv_as_python(odd_charges):
    queryset = Charge.objects.order_by("-created_on", "-id")
    copied = b"".join(export.lines(queryset)).decode()
    written = _python_lines(queryset)
    _same_but_the_metadata_text(copied, written)
    assert "\r\n" not in copied and copied.endswith("\n")
    rows = list(csv.DictReader(io.StringIO(copied)))
    assert len(rows) == len(odd_charges)
    # Never a formula, wherever an odd text landed; decimals with the currency's places.
    kinds = ("CharField", "TextField", "JSONField")
    texts = [n for n, f in export.COLUMNS if Charge._meta.get_field(f).get_internal_type() in kinds]
    assert {"account", "mode", "merchant_transaction_id", "metadata"} <= set(texts)
    for cell in (r[c] for r in rows for c in texts):
        assert not cell.startswith(export.FORMULA_START), cell
    assert {r["metadata"] for r in rows} >= {"'-5", "'-0.5", "'-x", "'=cmd", "5", "1.5", ""}
    decimals = {"0", "-1050", "0.00", "0.000", "-1.050", "-0.1050"}  # 0, 2, 3, 4 decimals
    assert {r["requested_decimal"] for r in rows} >= decimals
    assert any(r["refund_state"] == "refunded" for r in rows)
    assert any(r["refund_state"] == "partially_refunded" for r in rows)
    # A charge with a refund not final yet: what is left is the service's word.
    pending = Refund.objects.get(status="pending").charge
    [row] = [r for r in rows if r["charge_id"] == str(pending.gateway_id)]
    assert row["left_to_refund"] == str(services.refundable_amount(pending))


def test_a_filtered_export_is_the_same_both_ways(odd_charges):
    queryset = Charge.objects.filter(requested_currency__in=["USD", "JPY"]).order_by("pk")
    copied = b"".join(export.lines(queryset)).decode()
    _same_but_the_metadata_text(copied, _python_lines(queryset))
    assert len(list(csv.reader(io.StringIO(copied)))) == 1 + queryset.count()
