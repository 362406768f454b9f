"""The export's cells on awkward values: one path, the same cases on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_paycharge import services
from django_paycharge.admin import export
from django_paycharge.models import Charge, ChargeActionRequest, Refund

from .conftest import charge_row

pytestmark = pytest.mark.django_db

#: (a text from outside, its cell): each database's pass runs these same cases.
NEUTRALISED = [
    ("=1+1", "'=1+1"),
    ("+cmd", "'+cmd"),
    ("-2", "'-2"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\tt", "'\tt"),
    ("\rr", "'\rr"),
    ("a=b", "a=b"),
    (" =x", " =x"),
    ("'=x", "'=x"),
    ("", ""),
    ("名前", "名前"),
]
TEXTS = ("account", "mode", "payment_type", "merchant_transaction_id")


@pytest.mark.parametrize(("text", "cell"), NEUTRALISED)
def test_a_text_from_outside_never_starts_a_formula(text, cell):
    Charge.objects.bulk_create(
        [
            charge_row(**dict.fromkeys(TEXTS, text), metadata=text),
            charge_row(metadata={"k": text}),
        ]
    )
    lines = b"".join(export.lines(Charge.objects.order_by("-created_on", "-id"))).decode()
    first, second = list(csv.DictReader(io.StringIO(lines)))
    assert [first[name] for name in TEXTS] == [cell] * len(TEXTS)
    assert first["metadata"] == cell  # a JSON string: its text
    assert second["metadata"] == json.dumps({"k": text}, ensure_ascii=False)  # starts with {
    assert export.neutral(text) == cell


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


def test_the_export_of_awkward_values(odd_charges):
    """The same file on every database: the assertions hold in both passes."""
    queryset = Charge.objects.order_by("-created_on", "-id")
    text = b"".join(export.lines(queryset)).decode()
    assert "\r\n" not in text and text.endswith("\n")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(odd_charges)
    # Never a formula, wherever an odd text landed; decimals with the currency's places.
    kinds = ("CharField", "TextField", "JSONField")
    texts = [n for n, f in export.COLUMNS if Charge._meta.get_field(f).get_internal_type() in kinds]
    assert {"account", "mode", "merchant_transaction_id", "metadata"} <= set(texts)
    for cell in (r[c] for r in rows for c in texts):
        assert not cell.startswith(export.FORMULA_START), cell
    assert {r["metadata"] for r in rows} >= {"'-5", "'-0.5", "'-x", "'=cmd", "5", "1.5", ""}
    # An object's keys in code point order on both databases (PostgreSQL's jsonb text
    # would order them by length).
    assert '{"Z": -30, "aa": 2, "b": 1, "z": null, "é": true}' in {r["metadata"] for r in rows}
    decimals = {"0", "-1050", "0.00", "0.000", "-1.050", "-0.1050"}  # 0, 2, 3, 4 decimals
    assert {r["requested_decimal"] for r in rows} >= decimals
    assert {r["created_on"] for r in rows} >= {"2026-03-01T12:00:00+00:00"}
    assert "2026-03-01T12:02:00.246912+00:00" in {r["created_on"] for r in rows}
    # Ids and whole numbers go out as read: their text, nothing for none.
    by_id = {str(c.gateway_id): c for c in Charge.objects.all()}
    for row in rows:
        charge = by_id[row["charge_id"]]
        for name in ("store_id", "transaction_token_id", "requested_amount", "fee_amount"):
            value = getattr(charge, name)
            assert row[name] == ("" if value is None else str(value)), (name, value)
    assert {r["store_id"] for r in rows} > {""} and {r["fee_amount"] for r in rows} > {""}
    assert any(r["refund_state"] == "refunded" for r in rows)
    assert any(r["refund_state"] == "partially_refunded" for r in rows)
    # A charge with a refund not final yet: what is left is the service's word.
    pending = Refund.objects.get(status="pending").charge
    [row] = [r for r in rows if r["charge_id"] == str(pending.gateway_id)]
    assert row["left_to_refund"] == str(services.refundable_amount(pending))


def test_cells_read_raw_are_those_of_the_values_django_reads(odd_charges, monkeypatch):
    """The columns whose values Django would convert only for the export to take their text
    (ids and dates where the database has no such type, the JSON), and those read as text
    (PostgreSQL's ids and times), give the same file when read as Django reads them."""
    queryset = Charge.objects.order_by("-created_on", "-id")
    raw = b"".join(export.lines(queryset))
    monkeypatch.setattr(export, "_raw_maker", lambda *args: None)
    monkeypatch.setattr(export, "_read_as_text", lambda *args: frozenset())
    assert b"".join(export.lines(queryset)) == raw


def _refund_some(count: int) -> None:
    """Refund ``count`` successful charges: a successful refund each, a reservation on one."""
    now = timezone.now()
    charges = list(Charge.objects.filter(status="successful").order_by("pk")[:count])
    Refund.objects.bulk_create(
        Refund(
            gateway_id=uuid.uuid4(),
            charge=charge,
            amount=10,
            status="successful",
            synced_at=now,
            first_seen_at=now,
        )
        for charge in charges
    )
    ChargeActionRequest.objects.create(
        kind="refund", idempotency_key=f"asked-{count}", charge=charges[-1], params={"amount": 7}
    )
    services.recount_refunds_total()


def test_the_export_asks_no_query_a_refunded_charge(monkeypatch):
    """What is left to refund is read with the rows: with 3 or 40 refunded charges, at most
    one statement a chunk more than with none (what requests of unknown outcome reserve;
    each charge asked alone took two, and a chunk's charges with refunds asked in a list
    took two a chunk)."""
    monkeypatch.setattr(export, "CHUNK", 25)
    Charge.objects.bulk_create(charge_row(charged_amount=1000) for _ in range(60))
    queryset = Charge.objects.order_by("-created_on", "-id")

    def statements() -> tuple[int, list[dict[str, str]]]:
        with CaptureQueriesContext(connection) as queries:
            text = b"".join(export.lines(queryset)).decode()
        return len(queries), list(csv.DictReader(io.StringIO(text)))

    none, _rows = statements()
    _refund_some(3)
    few, _rows = statements()
    _refund_some(40)
    many, rows = statements()
    assert few <= none + 3 and many <= none + 3  # 60 charges: 3 chunks
    left = {r["charge_id"]: r["left_to_refund"] for r in rows}
    for charge in Charge.objects.all():
        assert left[str(charge.gateway_id)] == str(services.refundable_amount(charge))
    # Refunded twice, once, once with 7 reserved, twice with 7 reserved; not refunded.
    assert set(left.values()) == {"980", "990", "983", "973", "1000"}


def test_no_server_side_cursor_where_the_settings_disable_them(monkeypatch):
    """DISABLE_SERVER_SIDE_CURSORS (PgBouncer in transaction pooling) holds for the export
    as for ``QuerySet.iterator()``: it reads through a plain cursor."""
    Charge.objects.bulk_create(charge_row() for _ in range(3))

    def refused() -> None:
        raise AssertionError("a server-side cursor, though the settings disable them")

    monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)
    monkeypatch.setattr(connection, "chunked_cursor", refused)
    text = b"".join(export.lines(Charge.objects.order_by("-created_on", "-id"))).decode()
    assert len(list(csv.DictReader(io.StringIO(text)))) == 3
