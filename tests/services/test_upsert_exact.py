"""Hostile text and exact values survive a page's write (on PostgreSQL, one JSON document)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db import connection, transaction

from django_paycharge.client._parse import parse_charge
from django_paycharge.models import Charge
from django_paycharge.services import _upsert_sql as sql
from django_paycharge.services import upsert

pytestmark = pytest.mark.django_db

# Control characters, backslashes (and the look of escapes), quotes, and
# characters beyond ASCII, in text columns and nested in JSON ones.
HOSTILE = ["tab\there", "two\nlines", "cr\rhere", "back\\slash", "\\.", "\\N", "q\"'", "é 日本", ""]


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
        for name in upsert._INSERT_COLUMNS:
            value = getattr(stored[gid], sql.field(name).attname)
            expected = row[name]
            if type(expected) is sql.EncodedJSON:
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


def test_the_lock_takes_ids_as_text_and_refuses_what_is_not_a_uuid(fake_gateway):
    from django.core.exceptions import ValidationError

    payloads = hostile_payloads(fake_gateway, 3)
    prepared = upsert.prepare_charges([parse_charge(r) for r in payloads], account="default")
    upsert.upsert_prepared(prepared)
    ids = list(prepared.rows)
    with transaction.atomic():
        found = sql.lock_existing(connection, [str(ids[0]), ids[1]])
    assert set(found) == {ids[0], ids[1]}
    # Text that is not a UUID never reaches the statement (on PostgreSQL it would
    # otherwise be spliced into the array literal).
    with pytest.raises((ValueError, ValidationError)), transaction.atomic():
        sql.lock_existing(connection, [ids[2], "x}, {y"])
