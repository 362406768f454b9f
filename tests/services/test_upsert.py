"""The page writer: exact values, hostile text, its three statements, lost races.

Each database has its module (``_upsert_postgresql``, ``_upsert_sqlite``); these
tests run on whichever the suite runs on (both in CI).
"""

from __future__ import annotations

import json
import uuid
import warnings
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_paycharge import services
from django_paycharge.client.parsing import parse_charge
from django_paycharge.models import Charge
from django_paycharge.services.mirror import rows, upsert
from django_paycharge.services.mirror import sqlite as _upsert_sqlite

pytestmark = pytest.mark.django_db

# Control characters, backslashes (and the look of escapes), quotes, and
# characters beyond ASCII, in text columns and nested in JSON ones.
HOSTILE = ["tab\there", "two\nlines", "cr\rhere", "back\\slash", "\\.", "\\N", "q\"'", "é 日本", ""]


def gateway_state(fake_gateway):
    return {cid: c["status"] for cid, c in fake_gateway.charges.items()}


def mirror_state():
    return {str(g): s for g, s in Charge.objects.values_list("gateway_id", "status")}


def hostile_payloads(fake_gateway, count):
    fake_gateway.seed(count)
    payloads = []
    for n, raw in enumerate(sorted(fake_gateway.charges.values(), key=lambda c: c["id"])):
        raw = json.loads(json.dumps(raw), parse_float=Decimal)  # as the client decodes it
        text = HOSTILE[n % len(HOSTILE)]
        raw["descriptor"] = text or None
        raw["merchant_transaction_id"] = text + str(n)
        raw["metadata"] = {"note": text, "nested": {"list": [text, 1, None, True]}, "n": n}
        payloads.append(raw)
    return payloads


def assert_stored_as_prepared(prepared):
    stored = Charge.objects.in_bulk(list(prepared.rows), field_name="gateway_id")
    assert len(stored) == len(prepared.rows)
    for gid, row in prepared.rows.items():
        for name in rows.INSERT_COLUMNS:
            value = getattr(stored[gid], rows.field(name).attname)
            expected = row[name]
            if type(expected) is rows.EncodedJSON:
                expected = json.loads(expected)  # as the JSONField reads it back
            if name in ("synced_at", "first_seen_at") and value != expected:
                continue  # first_seen_at keeps the first write's; synced_at may be older
            assert value == expected, (name, value, expected)
            assert type(value) is type(expected) or expected is None, name


@pytest.mark.parametrize("size", [1, 100])
def test_a_write_stores_exactly_its_prepared_rows(fake_gateway, size):
    payloads = hostile_payloads(fake_gateway, size)
    prepared = upsert.prepare_charges([parse_charge(r) for r in payloads], account="default")
    assert upsert.upsert_prepared(prepared).created == size
    assert_stored_as_prepared(prepared)
    for raw in payloads:  # every row an update, with exact money and times
        raw["metadata"]["n"] = -1
        raw["requested_amount_formatted"] = Decimal("12345.6789")
    prepared = upsert.prepare_charges([parse_charge(r) for r in payloads], account="default")
    assert upsert.upsert_prepared(prepared).updated == size
    assert_stored_as_prepared(prepared)


def test_a_page_is_three_statements_through_djangos_cursor(fake_gateway):
    """Lock, insert, update, whatever the page's size: each through execute wrappers, but
    PostgreSQL's insert, a COPY on the same cursor (psycopg's, which the wrappers never see)."""
    payloads = hostile_payloads(fake_gateway, 100)
    upsert.upsert_charges([parse_charge(r) for r in payloads[:50]], account="default")
    for raw in payloads[:25]:
        raw["metadata"]["n"] = -1
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql.split()[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper), CaptureQueriesContext(connection) as queries:
        result = upsert.upsert_charges([parse_charge(r) for r in payloads], account="default")
    assert (result.created, result.updated, result.unchanged) == (50, 25, 25)
    # SELECT (lock), INSERT or COPY (new), INSERT ... DO UPDATE (changed), UPDATE (confirmed
    # open ones)
    statements = [s for s in seen if s not in ("SAVEPOINT", "RELEASE")]
    writes = ["INSERT"] if connection.vendor == "postgresql" else ["INSERT", "INSERT"]
    assert statements[:3] == ["SELECT", *writes, "UPDATE"][:3], statements
    assert len(statements) <= 4 - (connection.vendor == "postgresql"), statements
    assert len(queries.captured_queries) >= len(statements)


def test_the_lock_takes_ids_as_text_and_refuses_what_is_not_a_uuid(fake_gateway):
    payloads = hostile_payloads(fake_gateway, 3)
    prepared = upsert.prepare_charges([parse_charge(r) for r in payloads], account="default")
    upsert.upsert_prepared(prepared)
    ids = list(prepared.rows)
    sql = upsert.statements(connection)
    with transaction.atomic(), connection.cursor() as cursor:
        found = sql.lock_existing(cursor, [str(ids[0]), ids[1]])
    assert {row[0] for row in found} == {ids[0], ids[1]}
    # Text that is not a UUID never reaches the statement (on PostgreSQL it would
    # otherwise be spliced into the array literal).
    with pytest.raises(ValueError), transaction.atomic(), connection.cursor() as cursor:
        sql.lock_existing(cursor, [ids[2], "x}, {y"])


def test_a_too_long_text_or_a_missing_flag_does_not_sink_the_page(fake_gateway):
    """What does not fit its column is stored as unknown; raw keeps everything sent."""
    payloads = hostile_payloads(fake_gateway, 3)
    payloads[0]["descriptor"] = "d" * 300
    payloads[1]["only_direct_currency"] = None
    result = upsert.upsert_charges([parse_charge(r) for r in payloads], account="default")
    assert result.created == 3
    first = Charge.objects.get(gateway_id=payloads[0]["id"])
    assert first.descriptor is None and first.raw["descriptor"] == "d" * 300
    assert Charge.objects.get(gateway_id=payloads[1]["id"]).only_direct_currency is None


def test_times_with_offsets_postgresql_refuses_are_stored_as_their_instant(fake_gateway):
    """Python reads offsets up to 24 hours; PostgreSQL stores only up to 16 (a fuzz find)."""
    payloads = hostile_payloads(fake_gateway, 2)
    payloads[0]["created_on"] = "3241-11-29T11:00:26.6-19:58"
    payloads[1]["capture_at"] = "2030-01-01T00:00:00+23:59"
    result = upsert.upsert_charges([parse_charge(r) for r in payloads], account="default")
    assert result.created == 2
    first = Charge.objects.get(gateway_id=payloads[0]["id"])
    assert first.created_on == datetime(3241, 11, 30, 6, 58, 26, 600000, tzinfo=UTC)
    second = Charge.objects.get(gateway_id=payloads[1]["id"])
    assert second.capture_at == datetime(2029, 12, 31, 0, 1, tzinfo=UTC)
    assert second.raw["capture_at"] == "2030-01-01T00:00:00+23:59"


def test_a_charge_whose_row_cannot_be_built_is_set_aside_not_its_page(fake_gateway, monkeypatch):
    items = [parse_charge(r) for r in hostile_payloads(fake_gateway, 3)]
    original = rows.charge_row

    def failing(item, *args):
        if item.id == items[1].id:
            raise ValueError("odd")
        return original(item, *args)

    monkeypatch.setattr(upsert, "charge_row", failing)
    set_aside = []
    prepared = upsert.prepare_charges(
        items, account="default", on_error=lambda item, exc: set_aside.append(item.id)
    )
    assert set_aside == [items[1].id]
    assert upsert.upsert_prepared(prepared).created == 2
    with pytest.raises(ValueError, match="odd"):  # without on_error, the caller decides
        upsert.prepare_charges(items, account="default")


def test_rows_another_writer_inserted_meanwhile_are_written_again_not_lost(
    fake_gateway, monkeypatch
):
    """The insert finds rows the lock did not (another writer's): the page is stored again."""
    fake_gateway.seed(150)
    services.sync_charges()
    awaiting = next(cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting")
    fake_gateway.complete(awaiting)
    items = services.get_client().charges.list_page(limit=100, cursor_direction="asc").items
    locks = []
    original = upsert._lock_existing

    def blind_once(sql, cursor, ids):
        locks.append(len(ids))
        return {} if len(locks) == 1 else original(sql, cursor, ids)

    monkeypatch.setattr(upsert, "_lock_existing", blind_once)
    result = services.upsert_charges(items, account="default")
    assert len(locks) == 2  # the first attempt was rolled back and the page written again
    assert result.created == 0
    assert result.updated + result.unchanged == len(items)
    assert Charge.objects.count() == 150
    if awaiting in {str(c.id) for c in items}:
        assert result.updated == 1
    assert mirror_state() == gateway_state(fake_gateway)


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="only PostgreSQL tells which rows were new"
)
def test_on_the_last_attempt_new_rows_are_inserted_and_taken_ones_updated(
    fake_gateway, monkeypatch
):
    """Blind every attempt's lock: the last one reads back which ids were new."""
    fake_gateway.seed(100)
    items = services.get_client().charges.list_page(limit=100, cursor_direction="asc").items
    services.upsert_charges(items[:50], account="default")  # "another writer's" rows
    original = upsert._lock_existing
    blinded: list[int] = []

    def blind_before_insert(sql, cursor, ids):
        # The first lock of each attempt sees nothing; the last attempt's second lock
        # (of the rows its insert found taken) is real.
        if len(blinded) < upsert._ATTEMPTS:
            blinded.append(len(ids))
            return {}
        return original(sql, cursor, ids)

    monkeypatch.setattr(upsert, "_lock_existing", blind_before_insert)
    result = services.upsert_charges(items, account="default")
    assert blinded == [100] * upsert._ATTEMPTS
    assert (result.created, result.updated, result.unchanged) == (50, 0, 50)
    assert Charge.objects.count() == 100
    assert mirror_state() == gateway_state(fake_gateway)


def test_an_upsert_of_more_rows_than_a_page_stores_them_all(fake_gateway):
    fake_gateway.seed(250)
    client = services.get_client()
    items = list(client.charges.list(limit=100, cursor_direction="asc"))
    assert services.upsert_charges(items, account="default").created == 250
    awaiting = [cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting"]
    assert awaiting
    for cid in awaiting:
        fake_gateway.complete(cid)
    items = list(client.charges.list(limit=100, cursor_direction="asc"))
    result = services.upsert_charges(items, account="default")
    done = len(awaiting)
    assert (result.created, result.updated, result.unchanged) == (0, done, 250 - done)
    assert Charge.objects.count() == 250
    assert mirror_state() == gateway_state(fake_gateway)


# -- SQLite: rows as parameters --------------------------------------------------------------

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's own encoding")

VALUES: dict[str, list[Any]] = {
    "gateway_id": [uuid.UUID("0b5b3f3e-8f7e-4c57-9d0a-3d4f8f1f1a2b")],
    "created_on": [
        datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
        datetime(2026, 3, 1, 21, 30, 5, tzinfo=timezone(timedelta(hours=9))),
    ],
    "requested_amount_formatted": [Decimal("1234.50"), Decimal("0"), Decimal("-3.25")],
    "status": ["successful", ""],
    "requested_amount": [0, 10_000],
    "only_direct_currency": [True, False],
    "metadata": [{}, {"order": 7, "note": "é"}],
}


def _encoded(row):
    return _upsert_sqlite.row_encoder(connection)(row)


def _expected(row):
    return [
        None
        if row[name] is None
        else str(row[name])
        if type(row[name]) is rows.EncodedJSON
        else rows.field(name).get_db_prep_save(row[name], connection)
        for name in rows.INSERT_COLUMNS
    ]


@sqlite_only
def test_an_encoded_row_is_what_the_fields_would_store_whatever_its_values():
    full: dict[str, Any] = {name: None for name in rows.INSERT_COLUMNS}
    full.update(
        {name: values[0] for name, values in VALUES.items()},
        transaction_token_id=uuid.uuid4(),
        raw=rows.EncodedJSON('{"id":1}'),
        synced_at=VALUES["created_on"][1],
        first_seen_at=VALUES["created_on"][1],
        status_rank=3,
    )
    variants = [{**full, name: value} for name, values in VALUES.items() for value in values]
    # Rows of other shapes (NULLs, a value of an unexpected type) take the field's way.
    variants += [
        {**full, "transaction_token_id": None, "metadata": {"a": [1, 2]}},
        {**full, "store_id": str(uuid.uuid4())},
        {**full, "requested_amount_formatted": 12, "status": ""},
    ]
    for row in variants:
        assert _encoded(row) == _expected(row)
        kinds = [str if type(v) is rows.EncodedJSON else type(v) for v in _encoded(row)]
        assert kinds == [type(v) for v in _expected(row)]


@sqlite_only
def test_values_the_shortcuts_do_not_cover_take_the_fields_way():
    full = {name: None for name in rows.INSERT_COLUMNS}
    naive = {**full, "created_on": datetime(2026, 3, 1, 12, 30)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _encoded(naive) == _expected(naive)
    assert any("naive datetime" in str(w.message) for w in caught)
    with pytest.raises(ValidationError):
        _encoded({**full, "requested_amount_formatted": Decimal("NaN")})


@sqlite_only
def test_a_page_fits_an_old_sqlites_placeholder_limit(fake_gateway):
    """Django 5.2 supports SQLite 3.31, which takes 999 placeholders a statement."""
    import sqlite3

    fake_gateway.seed(150)
    connection.ensure_connection()
    raw = connection.connection
    before = raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    try:
        with CaptureQueriesContext(connection) as queries:
            assert services.sync_charges().created == 150
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, before)
    inserts = [
        q
        for q in queries.captured_queries
        if q["sql"].startswith('INSERT INTO "django_paycharge_charge"')
    ]
    assert len(inserts) == 6  # 28 rows a statement: 4 for a page of 100, 2 for the last 50
    assert mirror_state() == gateway_state(fake_gateway)


def test_a_single_read_keeps_the_store_and_merchant_names_a_list_gave(fake_gateway):
    """Only list items carry the names (the SDK's types): a later single read lacks them."""
    token = fake_gateway.create_transaction_token("card")["id"]
    made = services.create_charge(transaction_token_id=token, amount=700, currency="JPY")
    assert made.store_name is None  # a create answer has no names
    services.sync_charges()
    listed = Charge.objects.get(pk=made.pk)
    assert (listed.store_name, listed.merchant_name) == ("Test Store", "Fake Merchant")
    fake_gateway.request("PATCH", f"/stores/{made.store_id}/charges/{made.gateway_id}",
                         {"metadata": {"n": 1}})  # fmt: skip
    read = services.refresh_charge(made.gateway_id)
    assert read.metadata == {"n": 1} and "store_name" not in read.raw
    assert (read.store_name, read.merchant_name) == ("Test Store", "Fake Merchant")
