"""A page of charges on PostgreSQL: its three statements, and how its rows are sent.

New rows go by ``COPY`` straight into the table, in id order like the locks:
the server parses COPY's text cheaper than any statement's parameters, and
psycopg formats it in C. A row another writer inserted after our lock makes
the COPY fail on the unique id (after that writer commits); the page's
transaction is then rolled back and the page stored again (``upsert._LostRace``),
and the last attempt inserts with ``ON CONFLICT DO NOTHING`` instead, which
says which rows were taken. Changed rows (and that last insert) travel as one
JSON document, ``json_populate_recordset(NULL::table, %s::json)``: encoded by
the C JSON encoder and decoded by the server, with a statement text that is the
same for every page. The portable ``VALUES (...), (...)`` carries one
placeholder per value (thousands a page), and psycopg parses that text and
adapts every value in Python on every page, which costs more than the
database's own work; typed ``unnest`` arrays are no better, as psycopg dumps
arrays element by element in Python. ``json`` rather than ``jsonb``: the
server scans the text once, without building a binary document first.
The measurements: ``docs/benchmarks.md``, "The write path".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from ...models import Charge
from ...models.payload import PayloadEncoder
from .rows import INSERT_COLUMNS, LOCK_COLUMNS, EncodedJSON, field, set_changed


def _quoted(name: str) -> str:
    return f'"{name}"'


_TABLE = _quoted(Charge._meta.db_table)
_COLUMNS = ", ".join(_quoted(c) for c in INSERT_COLUMNS)
_PAGE = f"SELECT {_COLUMNS} FROM json_populate_recordset(NULL::{_TABLE}, %s::json)"  # noqa: S608

# Only model metadata is interpolated into these; every value is a parameter.
LOCK = (
    f"SELECT {', '.join(LOCK_COLUMNS)} FROM {_TABLE} "  # noqa: S608
    "WHERE gateway_id = ANY(%s::uuid[]) ORDER BY gateway_id FOR UPDATE"
)
INSERT = (
    f"INSERT INTO {_TABLE} ({_COLUMNS}) {_PAGE} "
    "ON CONFLICT (gateway_id) DO NOTHING RETURNING gateway_id"
)
COPY = f"COPY {_TABLE} ({_COLUMNS}) FROM STDIN"
KEYS = (
    f"SELECT gateway_id, {_quoted(str(Charge._meta.pk.column))} FROM {_TABLE} "  # noqa: S608
    "WHERE gateway_id = ANY(%s::uuid[])"
)
UPDATE = (
    f"INSERT INTO {_TABLE} ({_COLUMNS}) {_PAGE} "
    f"ON CONFLICT (gateway_id) {set_changed(_TABLE, _quoted)}"
)


def lock_existing(cursor: CursorWrapper, ids: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The :data:`LOCK_COLUMNS` of the stored rows of ``ids``, locked in id order.

    Locking in id order keeps two writers of overlapping pages from deadlocking.
    """
    cursor.execute(LOCK, [_uuid_array(ids)])
    return list(cursor.fetchall())


def keys(cursor: CursorWrapper, ids: Sequence[Any]) -> list[tuple[UUID, Any]]:
    """``(gateway id, key)`` of the stored rows of ``ids``."""
    cursor.execute(KEYS, [_uuid_array(ids)])
    return list(cursor.fetchall())


def _uuid_array(ids: Sequence[Any]) -> str:
    """``ids`` as one array literal: one parameter, not 100 placeholders (a statement of
    more than 50 is parsed again on every page by psycopg, and each value adapted in
    Python). A UUID's text needs no escaping; anything else must parse as one first (it
    would be spliced into the literal)."""
    text = (str(i) if type(i) is UUID else str(UUID(str(i))) for i in ids)
    return "{" + ",".join(text) + "}"


def insert_new(
    cursor: CursorWrapper,
    ids: Sequence[Any],
    rows: Sequence[dict[str, Any]],
    encode: Callable[[dict[str, Any]], str],
    *,
    last: bool,
) -> set[Any]:
    """Insert ``rows`` (of ``ids``, in id order); returns the ids that were new.

    An id missing from the answer is a row another writer inserted after our
    lock. Before the ``last`` attempt, rows are copied in and the answer is all
    of them or none: none means the COPY failed on a taken id, and left the
    transaction to be rolled back (the caller stores the page again).
    """
    if last:
        cursor.execute(INSERT, ["[" + ",".join(map(encode, rows)) + "]"])
        return {value for (value,) in cursor.fetchall()}
    import psycopg  # here: a shop on SQLite has no psycopg, and imports this module

    taken_id = _id_constraints(cursor)  # read now: a failed COPY aborts the transaction
    try:
        with cursor.copy(COPY) as copy:
            for row in rows:
                copy.write_row(_copied(row))
    except psycopg.errors.UniqueViolation as exc:
        # A taken charge id is a race; any other unique value is not: raised.
        if exc.diag.constraint_name not in taken_id:
            raise
        return set()
    return set(ids)


_ID_CONSTRAINTS: dict[str, set[str]] = {}


def _id_constraints(cursor: CursorWrapper) -> set[str]:
    """The names of the mirror's unique constraints and indexes on ``gateway_id`` alone
    (read from the database once: their names depend on how the table was made)."""
    alias = cursor.db.alias
    if alias not in _ID_CONSTRAINTS:
        found = cursor.db.introspection.get_constraints(cursor, Charge._meta.db_table)
        _ID_CONSTRAINTS[alias] = {
            name for name, c in found.items() if c["unique"] and c["columns"] == ["gateway_id"]
        }
    return _ID_CONSTRAINTS[alias]


def update_changed(cursor: CursorWrapper, encoded: Sequence[str]) -> None:
    """Rewrite the stored rows, unless the stored status ranks higher (a stale read)."""
    cursor.execute(UPDATE, ["[" + ",".join(encoded) + "]"])


def _copied(row: dict[str, Any]) -> list[Any]:
    """A row's values for COPY: psycopg formats them; JSON columns are encoded first."""
    values = [row[name] for name in INSERT_COLUMNS]
    for at in _JSON_AT:
        value = values[at]
        if value is not None and type(value) is not EncodedJSON:
            values[at] = _ENCODE(value)
    return values


def row_encoder(conn: BaseDatabaseWrapper) -> Callable[[dict[str, Any]], str]:
    """A function that turns a row into its JSON object for :data:`INSERT` and :data:`UPDATE`.

    Top-level values become the text PostgreSQL parses for their column type
    (exact: Decimal and microseconds kept, unlike a JSON number or Django's
    JSON encoder); JSON columns stay objects, written by the field's own
    encoder as a JSONField would. A JSON null is SQL NULL, as None is.
    """
    return _encode_row


_JSON_COLUMNS = [c for c in INSERT_COLUMNS if isinstance(field(c), models.JSONField)]
# Every JSON column of the mirror uses PayloadEncoder; a second one would need a pass per column.
assert {getattr(field(c), "encoder", None) for c in _JSON_COLUMNS} == {PayloadEncoder}
_ENCODE = PayloadEncoder(separators=(",", ":")).encode
_JSON_AT = [INSERT_COLUMNS.index(c) for c in _JSON_COLUMNS]
# Only these columns can hold such values; the others are JSON as they are.
_TYPED = [
    c
    for c in INSERT_COLUMNS
    if isinstance(field(c), models.UUIDField | models.DateTimeField | models.DecimalField)
]
_TEXT_OF: dict[type, Callable[[Any], str]] = {UUID: str, datetime: datetime.isoformat, Decimal: str}


def _encode_row(row: dict[str, Any]) -> str:
    item = {name: row[name] for name in INSERT_COLUMNS}
    for name in _TYPED:
        value = item[name]
        convert = _TEXT_OF.get(type(value))
        if convert is not None:
            item[name] = convert(value)
    ready = ""
    for name in _JSON_COLUMNS:
        value = item[name]
        if type(value) is EncodedJSON:  # already encoded: spliced in, not encoded again
            del item[name]
            ready += f',"{name}":{value}'  # a column name needs no escaping
    text = _ENCODE(item)
    return text[:-1] + ready + "}" if ready else text
