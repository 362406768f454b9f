"""A page of charges on SQLite: its three statements, and how its rows become parameters.

SQLite has no row locks: the page's transaction locks the database file when
it first writes, so the "lock" is a plain read of the stored rows, and two
writers of one page cannot both insert a row. Rows go as one multi-row
``VALUES`` list per statement, as many rows as SQLite's placeholder limit
allows: one execution per ~28 rows, not ``executemany`` of a one-row
statement, whose per-row step releases and retakes the GIL, so that a busy
thread beside it (the sync's reader) more than halves its rate. The measurements:
``docs/benchmarks.md``, "The write path".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from ...models import Charge
from .rows import INSERT_COLUMNS, LOCK_COLUMNS, EncodedJSON, field, set_changed


def _quoted(name: str) -> str:
    return f'"{name}"'


_TABLE = _quoted(Charge._meta.db_table)
_COLUMNS = ", ".join(_quoted(c) for c in INSERT_COLUMNS)
_ROW = "(" + ", ".join(["%s"] * len(INSERT_COLUMNS)) + ")"
_UPSERT = f"INSERT INTO {_TABLE} ({_COLUMNS}) VALUES {{}} ON CONFLICT (gateway_id) "  # noqa: S608

# Only model metadata and placeholders are interpolated into these; values are parameters.
# ``{}`` takes the placeholders of a statement's ids or rows.
LOCK = (
    f"SELECT {', '.join(LOCK_COLUMNS)} FROM {_TABLE} "  # noqa: S608
    "WHERE gateway_id IN ({}) ORDER BY gateway_id"
)
KEYS = (
    f"SELECT gateway_id, {_quoted(str(Charge._meta.pk.column))} FROM {_TABLE} "  # noqa: S608
    "WHERE gateway_id IN ({})"
)
INSERT = _UPSERT + "DO NOTHING"
UPDATE = _UPSERT + set_changed(_TABLE, _quoted)


def lock_existing(cursor: CursorWrapper, ids: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The :data:`LOCK_COLUMNS` of the stored rows of ``ids`` (UUIDs stored as hex)."""
    found: list[tuple[Any, ...]] = []
    # Anything but a UUID must parse as one first.
    hexes = [i.hex if type(i) is UUID else UUID(str(i)).hex for i in ids]
    for chunk in _chunks(hexes, _placeholders(cursor)):
        cursor.execute(LOCK.format(", ".join(["%s"] * len(chunk))), chunk)
        found += [(UUID(gid), *rest) for gid, *rest in cursor.fetchall()]
    return found


def keys(cursor: CursorWrapper, ids: Sequence[Any]) -> list[tuple[UUID, Any]]:
    """``(gateway id, key)`` of the stored rows of ``ids``."""
    found: list[tuple[UUID, Any]] = []
    hexes = [i.hex if type(i) is UUID else UUID(str(i)).hex for i in ids]
    for chunk in _chunks(hexes, _placeholders(cursor)):
        cursor.execute(KEYS.format(", ".join(["%s"] * len(chunk))), chunk)
        found += [(UUID(gid), key) for gid, key in cursor.fetchall()]
    return found


def insert_new(
    cursor: CursorWrapper,
    ids: Sequence[Any],
    rows: Sequence[dict[str, Any]],
    encode: Callable[[dict[str, Any]], list[Any]],
    *,
    last: bool,
) -> set[Any]:
    """Insert ``rows`` (of ``ids``, encoded by :func:`row_encoder`); returns the ids that were new.

    Never short on SQLite: the page's transaction holds the database's write
    lock from its first insert, and a writer that read before another's
    commit fails ("database is locked") instead of inserting less. A short
    count would say which rows were new only on SQLite 3.35+ (``RETURNING``).
    Every attempt inserts the same way here (``last`` is PostgreSQL's concern).
    """
    inserted = 0
    encoded = [encode(row) for row in rows]
    for chunk in _chunks(encoded, _rows_per_statement(cursor)):
        cursor.execute(INSERT.format(", ".join([_ROW] * len(chunk))), _flat(chunk))
        inserted += cursor.rowcount
    return set(ids) if inserted == len(ids) else set()


def update_changed(cursor: CursorWrapper, encoded: Sequence[list[Any]]) -> None:
    """Rewrite the stored rows, unless the stored status ranks higher (a stale read)."""
    for chunk in _chunks(encoded, _rows_per_statement(cursor)):
        cursor.execute(UPDATE.format(", ".join([_ROW] * len(chunk))), _flat(chunk))


def row_encoder(conn: BaseDatabaseWrapper) -> Callable[[dict[str, Any]], list[Any]]:
    """A function that turns a row into the parameters of one ``VALUES`` tuple.

    A value of its column's own type takes the one step of the field's
    preparation that changes it on SQLite, if any (``.hex`` for a UUID,
    ``ops.adapt_datetimefield_value``, ``ops.adapt_decimalfield_value``);
    text, whole numbers and booleans pass as they are; anything else, JSON
    included, goes through the field. Calling a function for each of a page's
    values costs more than the statements (``docs/benchmarks.md``, "The write
    path"), so the loop calls one only where a value changes, and a page's one
    ``synced_at`` is converted once.
    """
    plan = [(name, *_step(field(name), conn)) for name in INSERT_COLUMNS]

    def encode(row: dict[str, Any]) -> list[Any]:
        values: list[Any] = []
        for name, kind, fast, prep in plan:
            value = row[name]
            if value is None:
                values.append(None)
            elif type(value) is not kind:
                values.append(prep(value, conn))
            else:
                values.append(value if fast is None else fast(value))
        return values

    return encode


Step = tuple[type, Callable[[Any], Any] | None, Callable[..., Any]]


def _step(f: models.Field[Any, Any], conn: BaseDatabaseWrapper) -> Step:
    """(the column's own type, how such a value changes or None, the field's own way)."""
    prep = f.get_db_prep_save
    if isinstance(f, models.JSONField):
        # Already encoded by the field's encoder; anything else is encoded as the field
        # would (json.dumps with its encoder), without its three calls a value.
        return EncodedJSON, None, _json_step(f.encoder)
    if isinstance(f, models.UUIDField):
        return UUID, _hex, prep
    if isinstance(f, models.DateTimeField):
        return datetime, _datetime_step(conn, prep), prep
    if isinstance(f, models.DecimalField):
        return Decimal, _decimal_step(conn, prep, f.max_digits, f.decimal_places), prep
    if isinstance(f, models.BooleanField):
        return bool, None, prep
    if isinstance(f, models.IntegerField):
        return int, None, prep
    return str, None, prep  # text


def _json_step(encoder: type[json.JSONEncoder] | None) -> Callable[..., str]:
    encode = (encoder or json.JSONEncoder)().encode

    def convert(value: Any, conn: BaseDatabaseWrapper) -> str:
        return encode(value)

    return convert


def _hex(value: UUID) -> str:
    return value.hex


def _datetime_step(conn: BaseDatabaseWrapper, prep: Callable[..., Any]) -> Callable[[Any], Any]:
    last: list[Any] = [None, None]  # (value, converted): a page shares one synced_at

    def convert(value: datetime) -> Any:
        if value is last[0]:
            return last[1]
        # A naive datetime takes the field's way, which warns about it.
        done = conn.ops.adapt_datetimefield_value(value) if value.tzinfo else prep(value, conn)
        last[:] = value, done
        return done

    return convert


def _decimal_step(
    conn: BaseDatabaseWrapper, prep: Callable[..., Any], digits: int | None, places: int | None
) -> Callable[[Any], Any]:
    def convert(value: Decimal) -> Any:
        # NaN and infinities take the field's way, which refuses them.
        if not value.is_finite():
            return prep(value, conn)
        return conn.ops.adapt_decimalfield_value(value, digits, places)

    return convert


def _rows_per_statement(cursor: CursorWrapper) -> int:
    """A whole page (3,500 placeholders) where SQLite takes that many (3.32 and later:
    32,766), fewer on an older library (999, and Django 5.2 supports SQLite 3.31)."""
    return max(1, min(100, _placeholders(cursor) // len(INSERT_COLUMNS)))


def _placeholders(cursor: CursorWrapper) -> int:
    import sqlite3  # here: a Python built without it still serves PostgreSQL

    # The driver's own cursor (the wrapper passes attributes through) knows its
    # connection, and the library its limit; Django's figure is the old default.
    limit: int = cursor.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return limit


def _chunks(values: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def _flat(rows: Sequence[list[Any]]) -> list[Any]:
    return [value for row in rows for value in row]
