"""The mirror's row preparation takes shortcuts; each must store what the field would."""

from __future__ import annotations

import uuid
import warnings
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from django_paycharge.services import _upsert_sql as sql

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor == "postgresql",
        reason="PostgreSQL takes a page as JSON, not prepared values: see test_sync.py",
    ),
]

VALUES = {
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


@pytest.mark.parametrize(
    ("name", "value"), [(name, v) for name, values in VALUES.items() for v in values]
)
def test_a_prepared_value_is_what_the_field_would_store(name, value):
    f = sql.field(name)
    prepare = sql.preparer(f, connection)
    assert prepare(value) == f.get_db_prep_save(value, connection)
    assert type(prepare(value)) is type(f.get_db_prep_save(value, connection))
    assert prepare(None) is None


def test_values_the_shortcuts_do_not_cover_take_the_fields_way():
    created = sql.preparer(sql.field("created_on"), connection)
    naive = datetime(2026, 3, 1, 12, 30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert created(naive) == sql.field("created_on").get_db_prep_save(naive, connection)
    assert any("naive datetime" in str(w.message) for w in caught)
    amount = sql.preparer(sql.field("requested_amount_formatted"), connection)
    with pytest.raises(ValidationError):
        amount(Decimal("NaN"))
    gateway_id = sql.preparer(sql.field("gateway_id"), connection)
    text = "0b5b3f3e-8f7e-4c57-9d0a-3d4f8f1f1a2b"
    assert gateway_id(text) == sql.field("gateway_id").get_db_prep_save(text, connection)
    assert sql.preparer(sql.field("raw"), connection)(sql.EncodedJSON('{"a":1}')) == '{"a":1}'


def test_an_encoded_row_is_what_the_fields_would_store_whatever_its_nulls():
    from django_paycharge.services import upsert

    columns = upsert._INSERT_COLUMNS
    encode = sql.row_encoder(connection, columns)
    full = {name: None for name in columns}
    full.update(
        {name: values[0] for name, values in VALUES.items()},
        transaction_token_id=uuid.uuid4(),
        raw=sql.EncodedJSON('{"id":1}'),
        synced_at=VALUES["created_on"][1],
        first_seen_at=VALUES["created_on"][1],
        status_rank=3,
    )
    # Rows of different shapes (which columns are NULL, a value of an unexpected
    # type) take different ways through the preparers; each must match the fields'.
    rows = [
        full,
        {**full, "transaction_token_id": None, "metadata": {"a": [1, 2]}},
        {**full, "created_on": VALUES["created_on"][1], "store_id": str(uuid.uuid4())},
        {**full, "requested_amount_formatted": 12, "status": ""},
        full,
    ]
    for row in rows:
        expected = [
            None
            if row[name] is None
            else str(row[name])
            if type(row[name]) is sql.EncodedJSON
            else sql.field(name).get_db_prep_save(row[name], connection)
            for name in columns
        ]
        assert encode(row) == expected
