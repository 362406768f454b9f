"""SQL of the guarded bulk upsert (see :mod:`.upsert`), fast on each backend.

A page of rows becomes one row source. On PostgreSQL it is the whole page as
one JSON parameter, ``json_populate_recordset(NULL::table, %s::json)``:
encoded by the C JSON encoder and decoded by the server, with a statement
text that is the same for every page. The portable ``VALUES (...), (...)``
carries one placeholder per value (~3,500 a page), and psycopg re-parsed
that text and adapted every value in Python on every page, which cost more
than the database's own work; typed ``unnest`` arrays were no better, as
psycopg dumps arrays element by element in Python.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, cast
from uuid import UUID

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from ..models import Charge


class EncodedJSON(str):
    """The value of a JSON column, already encoded as its field's encoder would."""

    __slots__ = ()


def field(name: str) -> models.Field[Any, Any]:
    return cast("models.Field[Any, Any]", Charge._meta.get_field(name))


def column_list(conn: BaseDatabaseWrapper, columns: Sequence[str]) -> str:
    quote = conn.ops.quote_name
    return ", ".join(quote(field(c).get_attname_column()[1] or c) for c in columns)


def row_encoder(
    conn: BaseDatabaseWrapper, columns: Sequence[str]
) -> Callable[[dict[str, Any]], Any]:
    """A function that encodes one row for :func:`row_sources` on ``conn``'s backend.

    Encoding is the costly part of a page and needs no database access, so the
    sync does it for the next page while the current one is being written.
    """
    if conn.vendor == "postgresql":
        return _pg_json_encoder(tuple(columns))
    prepare = [(name, preparer(field(name), conn)) for name in columns]

    def encode(row: dict[str, Any]) -> list[Any]:
        return [p(row[name]) for name, p in prepare]

    return encode


def row_sources(
    conn: BaseDatabaseWrapper, encoded: Sequence[Any], columns: Sequence[str]
) -> Iterator[tuple[str, list[Any]]]:
    """SQL yielding the rows ``encoded`` by :func:`row_encoder` (usable after
    ``INSERT INTO t (columns)``) and its parameters: one statement on
    PostgreSQL, one per :func:`rows_per_statement` rows elsewhere.

    Elsewhere than PostgreSQL, a ``VALUES`` list with a placeholder per value:
    the driver keeps the compiled statement for pages of the same size. One
    execution a page, not ``executemany`` of a one-row statement: the driver
    releases and retakes the GIL around every row's step, and while the sync's
    prefetch thread was busy each retake waited for it (measured alone, 10,000
    rows/s either way; beside a busy thread, 3,500 rows/s for ``executemany``
    against 8,000 for one statement a page).
    """
    if conn.vendor == "postgresql":
        table = conn.ops.quote_name(Charge._meta.db_table)
        sql = (
            f"SELECT {column_list(conn, columns)} "  # noqa: S608 - names, not values
            f"FROM json_populate_recordset(NULL::{table}, %s::json)"
        )
        yield sql, ["[" + ",".join(encoded) + "]"]
        return
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    size = rows_per_statement(conn, len(columns))
    for start in range(0, len(encoded), size):
        chunk = encoded[start : start + size]
        params: list[Any] = []
        for values in chunk:
            params.extend(values)
        yield "VALUES " + ", ".join([one] * len(chunk)), params


def page_cursor(conn: BaseDatabaseWrapper) -> CursorWrapper:
    """A cursor for the statements :func:`row_sources` yields.

    On PostgreSQL with psycopg 3 it binds parameters on the server: Django's
    default cursor binds them on the client, quoting a page's ~250 KB JSON
    document into the statement's text, which the server then parses as a
    literal. Sent as a parameter, the page cost 9.4 to 11.2 ms a page instead
    of 12.7 to 13.4, and half the client CPU; psycopg prepares nothing unless
    the project set ``prepare_threshold``, as for Django's cursors.

    On SQLite it is Django's own cursor, except that the conversion of a
    statement's ``%s`` placeholders to ``?`` is remembered: a page's statement
    is the same text every time, and converting its 3,500 placeholders cost
    0.6 ms a page of the writer's time under the GIL.

    Either way the cursor is Django's own wrapper around it: execute
    wrappers, query logging and database errors as for any cursor. A backend
    that makes its own cursors (one that counts queries for metrics, say)
    gets ``conn.cursor()``.
    """
    maker = _page_cursor_maker(conn.vendor)
    if maker is None or getattr(conn.create_cursor, "__func__", None) is not maker[0]:
        return conn.cursor()
    make = maker[1]
    conn.validate_thread_sharing()
    conn.ensure_connection()
    with conn.wrap_database_errors:
        # Typed as Any: django-stubs say these take a CursorWrapper, not the driver's cursor.
        raw: Any = make(conn.connection)
    if conn.queries_logged:
        return conn.make_debug_cursor(raw)
    return conn.make_cursor(raw)


@functools.cache
def _page_cursor_maker(vendor: str) -> tuple[Any, Callable[[Any], Any]] | None:
    """Django's own ``create_cursor`` of ``vendor`` and how to open a page cursor
    on the driver's connection instead; None: use ``conn.cursor()``.

    Imports are here, not at the top: a Python without sqlite3, or a project
    on psycopg2, still serves the other backends.
    """
    if vendor == "postgresql":
        from django.db.backends.postgresql.psycopg_any import is_psycopg3

        if not is_psycopg3:
            return None
        import psycopg
        from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQL

        return PostgreSQL.create_cursor, psycopg.Cursor
    if vendor == "sqlite":
        from django.db.backends.sqlite3.base import DatabaseWrapper as SQLite
        from django.db.backends.sqlite3.base import SQLiteCursorWrapper

        class PageCursor(SQLiteCursorWrapper):
            def convert_query(self, query: str, *, param_names: Any = None) -> str:
                if param_names is not None:
                    return str(super().convert_query(query, param_names=param_names))
                return _converted(query, super().convert_query)

        return SQLite.create_cursor, lambda connection: connection.cursor(factory=PageCursor)
    return None


_CONVERTED: dict[str, str] = {}
# A page statement of each size and kind (insert, update): a handful of texts.
_CONVERTED_MAX = 16


def _converted(query: str, convert: Callable[[str], str]) -> str:
    done = _CONVERTED.get(query)
    if done is None:
        done = convert(query)
        if len(_CONVERTED) >= _CONVERTED_MAX:
            _CONVERTED.clear()
        _CONVERTED[query] = done
    return done


# A sync page: 3,500 placeholders, under SQLite's 32,766 (since 3.32).
ROWS_PER_STATEMENT = 100


def rows_per_statement(conn: BaseDatabaseWrapper, columns: int) -> int:
    """Rows of ``columns`` values one statement can carry: a page, or fewer where
    the database takes fewer placeholders (SQLite before 3.32: 999, and Django
    5.2 supports 3.31)."""
    limit = conn.features.max_query_params
    if conn.vendor == "sqlite":
        import sqlite3  # not at the top: a Python built without it still serves PostgreSQL

        # Django's figure is the old default; the library in use says its own.
        if conn.connection is None:
            conn.ensure_connection()
        limit = conn.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    if limit is None:
        return ROWS_PER_STATEMENT
    return max(1, min(ROWS_PER_STATEMENT, limit // columns))


@functools.cache
def _pg_json_encoder(columns: tuple[str, ...]) -> Callable[[dict[str, Any]], str]:
    # Built once per column list: it depends on the model's fields only, and every
    # upsert (a sync page, a webhook's refresh) would otherwise classify them again.
    # Top-level values become the text PostgreSQL parses for their column type
    # (exact: Decimal and microseconds kept, unlike a JSON number or Django's
    # JSON encoder); JSON columns stay objects, written by their field's own
    # encoder as a JSONField would. A JSON null is SQL NULL, as None was.
    # ``json`` rather than ``jsonb``: the server only scans the text once,
    # without building a binary document first (about 25 % faster a page).
    json_columns = [name for name in columns if isinstance(field(name), models.JSONField)]
    encode = _json_encoder(set(json_columns))(separators=(",", ":")).encode
    text_of: dict[type, Callable[[Any], str]] = {
        UUID: str,
        datetime: datetime.isoformat,
        Decimal: str,
    }
    # Only these columns can hold such values; the others are JSON as they are.
    typed = [
        name
        for name in columns
        if isinstance(field(name), models.UUIDField | models.DateTimeField | models.DecimalField)
    ]

    def encode_row(row: dict[str, Any]) -> str:
        item = {name: row[name] for name in columns}
        for name in typed:
            value = item[name]
            convert = text_of.get(type(value))
            if convert is not None:
                item[name] = convert(value)
        ready = ""
        for name in json_columns:
            value = item[name]
            if type(value) is EncodedJSON:
                del item[name]
                ready += f',"{name}":{value}'  # a column name needs no escaping
        text = encode(item)
        return text[:-1] + ready + "}" if ready else text

    return encode_row


def _json_encoder(json_columns: set[str]) -> type[json.JSONEncoder]:
    encoders = {getattr(field(name), "encoder", None) or json.JSONEncoder for name in json_columns}
    # One encoder for every row: true of the mirror (every JSON column uses
    # PayloadEncoder); a second one would need a pass per column.
    assert len(encoders) <= 1, encoders
    return next(iter(encoders), json.JSONEncoder)


def preparer(f: models.Field[Any, Any], conn: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    """``f.get_db_prep_save`` with shortcuts for values of the type the sync reads.

    None is NULL for every mirrored column (all nullable ones, JSON included,
    store SQL NULL for None), and text, whole numbers and booleans of the
    right Python type pass through every backend's preparation as they are.
    A UUID, an aware datetime or a finite Decimal goes straight to the step
    of the backend's preparation that changes it (``.hex`` where UUIDs are
    not native, ``ops.adapt_datetimefield_value``,
    ``ops.adapt_decimalfield_value``): the field's own checks before that
    step only convert or warn about other types. Other values are prepared by
    the field, with the real connection (not the ``connection`` proxy, whose
    every attribute read is a context-local lookup), and the last result is
    reused for the same object (``synced_at`` and ``first_seen_at`` are one
    ``datetime`` for a whole page). An :class:`EncodedJSON` (a JSON column's
    value, already encoded) is its text.
    """
    prep = f.get_db_prep_save
    kind: type | None = None
    fast: Callable[[Any], Any] | None = None
    if isinstance(f, models.CharField | models.TextField):
        kind = str
    elif isinstance(f, models.BooleanField):
        kind = bool
    elif isinstance(f, models.IntegerField):
        kind = int
    elif isinstance(f, models.UUIDField):
        kind = UUID
        fast = None if conn.features.has_native_uuid_field else _uuid_hex
    elif isinstance(f, models.DateTimeField):
        kind = datetime
        fast = _aware(conn.ops.adapt_datetimefield_value, prep, conn)
    elif isinstance(f, models.DecimalField):
        kind = Decimal
        fast = _finite(conn.ops.adapt_decimalfield_value, f, prep, conn)
    last: list[Any] = [None, None]  # the last (value, prepared) pair

    def prepare(value: Any) -> Any:
        if value is None:
            return value
        if type(value) is kind and fast is None:
            return value
        if type(value) is EncodedJSON:
            return str(value)
        if value is last[0]:
            return last[1]
        # The sync's own types take the step of the field's way that changes them.
        prepared = fast(value) if fast is not None and type(value) is kind else prep(value, conn)
        last[0], last[1] = value, prepared
        return prepared

    return prepare


def _uuid_hex(value: UUID) -> str:
    return value.hex


def _aware(
    adapt: Callable[[datetime], Any], prep: Callable[..., Any], conn: BaseDatabaseWrapper
) -> Callable[[datetime], Any]:
    def convert(value: datetime) -> Any:
        # A naive datetime takes the field's way, which warns about it.
        return adapt(value) if value.tzinfo is not None else prep(value, conn)

    return convert


def _finite(
    adapt: Callable[..., Any],
    f: models.Field[Any, Any],
    prep: Callable[..., Any],
    conn: BaseDatabaseWrapper,
) -> Callable[[Decimal], Any]:
    digits, places = getattr(f, "max_digits", None), getattr(f, "decimal_places", None)

    def convert(value: Decimal) -> Any:
        # NaN and infinities take the field's way, which refuses them.
        return adapt(value, digits, places) if value.is_finite() else prep(value, conn)

    return convert


_LOCK_COLUMNS = ("gateway_id", "status", "status_rank", "raw_digest", "payment_type")
_LOCKED = ", ".join(_LOCK_COLUMNS)


def lock_existing(
    conn: BaseDatabaseWrapper, ids: Sequence[Any]
) -> dict[Any, tuple[str, int, str, str]]:
    """``(status, status_rank, raw_digest, payment_type)`` of the stored rows of ``ids``, locked.

    Locking in id order keeps two writers of overlapping pages from deadlocking.
    """
    if conn.vendor == "postgresql":
        quote = conn.ops.quote_name
        table = quote(Charge._meta.db_table)
        sql = (
            f"SELECT {_LOCKED} FROM {table} "  # noqa: S608 - names, not values
            "WHERE gateway_id = ANY(%s::uuid[]) ORDER BY gateway_id FOR UPDATE"
        )
        # One array literal (UUID text needs no escaping), not 100 placeholders.
        with conn.cursor() as cursor:
            # A UUID's text is safe as it is; anything else must parse as one first.
            text = (str(i) if type(i) is UUID else str(UUID(str(i))) for i in ids)
            cursor.execute(sql, ["{" + ",".join(text) + "}"])
            found = cursor.fetchall()
    elif conn.vendor == "sqlite":
        # SQLite has no row locks (its transaction locks the file when it writes); the
        # ORM's query building and result conversion cost three times the query here.
        gateway_id = field("gateway_id")
        size = rows_per_statement(conn, 1)
        found = []
        with conn.cursor() as cursor:
            for start in range(0, len(ids), size):
                chunk = ids[start : start + size]
                sql = (
                    f"SELECT {_LOCKED} "  # noqa: S608 - names and placeholders, not values
                    f"FROM {conn.ops.quote_name(Charge._meta.db_table)} "
                    f"WHERE gateway_id IN ({', '.join(['%s'] * len(chunk))}) ORDER BY gateway_id"
                )
                cursor.execute(sql, [gateway_id.get_db_prep_value(i, conn) for i in chunk])
                found += [(gateway_id.to_python(gid), *rest) for gid, *rest in cursor.fetchall()]
    else:
        found = list(
            Charge.objects.using(conn.alias)
            .select_for_update()
            .filter(gateway_id__in=ids)
            .order_by("gateway_id")
            .values_list(*_LOCK_COLUMNS)
        )
    return {gid: (status, rank, digest, ptype) for gid, status, rank, digest, ptype in found}
