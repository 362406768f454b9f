"""Insert one row in one statement: ``INSERT ... ON CONFLICT DO NOTHING RETURNING id``.

For the rows written on the paths someone waits for, measured against what a
shop would write by hand (``bench/``; figures in docs/benchmarks.md): a
webhook delivery (the gateway waits for the answer) and a new charge request
and its charge (the customer waits at the checkout). The ORM's insert
compiler costs more CPU per row than this statement, and a row that exists
already costs ``create()`` an ``IntegrityError`` and a second query; here it
is one statement that returns no id.

The statement is built once per model, database and conflict target from
the model's own fields (their columns and ``get_db_prep_save``), so a field
added to a model is written here too; fields not given take their defaults,
``auto_now`` ones the time of the insert. Databases without ``ON CONFLICT
... RETURNING`` (SQLite before 3.35, others) take the ORM's way.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connections, models, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.dispatch import Signal
from django.utils import timezone

_UNSET = object()
_NOW = object()


class _Statement:
    """The SQL of one (model, database, conflict target), and how each value is made."""

    __slots__ = ("defaults", "fields", "plain", "row", "sql")

    def __init__(self, sql: str, row: str, fields: list[Any], defaults: list[Any]) -> None:
        self.sql = sql
        #: The statement's ``VALUES (...)`` (an insert ``unless`` a row is found selects them).
        self.row = row
        #: The fields in the order of the statement's placeholders.
        self.fields = fields
        #: For each field: its default's database value when constant, _NOW, or _UNSET.
        self.defaults = defaults
        #: For each field: the type of value that it sends as it is (None: none does).
        self.plain = [_plain_type(f) for f in fields]


_statements: dict[tuple[type[models.Model], str, str, tuple[str, ...]], _Statement] = {}


def insert_once(
    model: type[models.Model],
    values: dict[str, Any],
    *,
    conflict: tuple[str, ...] = (),
    using: str | None = None,
    unless: tuple[str, list[Any]] | None = None,
) -> int | None:
    """Insert a row of ``model``; its id, or None when a unique constraint already holds it.

    ``values`` maps field names to values; other fields get their defaults.
    ``conflict``: the fields of the unique constraint that says "already
    there" (empty: any unique constraint). ``unless``: a query (SQL, parameters)
    that finds rows: when it does, nothing is inserted either (None), in the
    same statement. Inside a transaction the row is part of it; outside one it
    is committed when this returns.
    """
    alias = using or router.db_for_write(model)
    connection = connections[alias]
    if not _has_upsert(connection):
        if unless is not None and _finds(connection, unless):
            return None
        return _insert_with_orm(model, values, alias, conflict)
    sql, params = insert_statement(
        model, values, connection, conflict=conflict, alias=alias, unless=unless
    )
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return int(row[0]) if row else None


@dataclass(frozen=True)
class Link:
    """What the flow that asked for a new row (a charge, a refund) writes with it: its
    request marked done.

    ``write(row)`` runs after the insert; ``statement(connection, alias)`` is the
    same write as one ``UPDATE ... WHERE ...`` whose link is the new row's id, the
    SQL :func:`new_id`, with its parameters; ``announces``: the signals ``write``
    may send (while one has receivers, the two are not one statement).
    """

    write: Callable[[Any], object]
    statement: Callable[[BaseDatabaseWrapper, str], tuple[str, list[Any]]]
    announces: tuple[Signal, ...] = ()


def new_id(model: type[models.Model]) -> str:
    """The SQL of the id :func:`insert_and_link` inserts, for its link's statement."""
    return f"(SELECT {model._meta.pk.column} FROM new)"  # noqa: S608 - a column name


def insert_and_link(
    model: type[models.Model],
    values: dict[str, Any],
    link: Link,
    connection: BaseDatabaseWrapper,
    alias: str,
    *,
    conflict: tuple[str, ...],
) -> int | None:
    """PostgreSQL: the insert of :func:`insert_once` and ``link``'s statement as one
    (the link's UPDATE reads the inserted id from the INSERT's ``RETURNING``): one round
    trip in autocommit. The new row's id, or None (nothing written) when it exists.
    Only when nothing is announced: the caller checks ``link.announces``."""
    insert, params = insert_statement(model, values, connection, conflict=conflict, alias=alias)
    update, link_params = link.statement(connection, alias)
    sql = (
        f"WITH new AS ({insert}), "  # noqa: S608 - statements built from model names
        f"linked AS ({update} AND EXISTS (SELECT 1 FROM new) RETURNING 1) "
        f"SELECT {new_id(model)}"
    )
    # Inside a transaction of the caller's, a savepoint keeps a failure from spoiling it.
    guard = transaction.atomic(using=alias) if connection.in_atomic_block else nullcontext()
    with guard, bound_cursor(connection) as cursor:
        cursor.execute(sql, [*params, *link_params])
        (pk,) = cursor.fetchone()
    return None if pk is None else int(pk)


def bound_cursor(connection: BaseDatabaseWrapper) -> Any:
    """A cursor for a one-statement write: on psycopg 3, its values bound on the server.

    Django's default (client-side binding) has psycopg quote every value into
    the statement's text in Python, a large part of the write's CPU for the 40
    to 50 values of a row. Here they travel as parameters, in the same single
    round trip. Whether a statement is also prepared stays the shop's
    choice (``OPTIONS["prepare_threshold"]``, None unless set, as behind a
    pooler in transaction mode); other databases and psycopg 2 use Django's cursor.
    """
    if connection.vendor != "postgresql" or _server_binding(connection):
        return connection.cursor()
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if not is_psycopg3:
        return connection.cursor()
    import psycopg

    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw: Any = psycopg.Cursor(connection.connection)
    if connection.queries_logged:  # as connection.cursor() would: logged, errors wrapped
        return connection.make_debug_cursor(raw)
    return connection.make_cursor(raw)


def _server_binding(connection: BaseDatabaseWrapper) -> bool:
    """Whether Django's own cursors bind on the server already (the shop's setting)."""
    return connection.settings_dict["OPTIONS"].get("server_side_binding") is True


def insert_statement(
    model: type[models.Model],
    values: dict[str, Any],
    connection: BaseDatabaseWrapper,
    *,
    conflict: tuple[str, ...] = (),
    alias: str,
    unless: tuple[str, list[Any]] | None = None,
) -> tuple[str, list[Any]]:
    """The SQL and parameters :func:`insert_once` runs (for a caller that runs more with it).

    Only for PostgreSQL and SQLite 3.35+ (``ON CONFLICT ... RETURNING``).
    """
    statement = _statement(model, alias, connection, conflict)
    sql, params = statement.sql, _params(statement, values, connection)
    if unless is None:
        return sql, params
    query, query_params = unless
    row = statement.row.removeprefix("VALUES (").removesuffix(") ")
    sql = sql.replace(statement.row, f"SELECT {row} WHERE NOT EXISTS ({query}) ", 1)
    return sql, [*params, *query_params]


def _params(
    statement: _Statement, values: dict[str, Any], connection: BaseDatabaseWrapper
) -> list[Any]:
    now = None
    params: list[Any] = []
    for field, default, plain in zip(
        statement.fields, statement.defaults, statement.plain, strict=True
    ):
        if field.name in values:
            value = values[field.name]
            if value is None or type(value) is plain:
                params.append(value)  # what the field would send: not worth a call
                continue
        elif default is _NOW:
            value = now = now or timezone.now()
        elif default is _UNSET:
            value = field.get_default()
        else:
            params.append(default)
            continue
        params.append(field.get_db_prep_save(value, connection))
    return params


def as_stored(model: type[models.Model], pk: int, values: dict[str, Any], alias: str) -> Any:
    """The instance of the row :func:`insert_once` just inserted, without reading it back."""
    instance = model(pk=pk, **values)
    instance._state.adding = False
    instance._state.db = alias
    return instance


def _has_upsert(connection: BaseDatabaseWrapper) -> bool:
    return connection.vendor in ("postgresql", "sqlite") and bool(
        connection.features.can_return_columns_from_insert
    )


def _statement(
    model: type[models.Model],
    alias: str,
    connection: BaseDatabaseWrapper,
    conflict: tuple[str, ...],
) -> _Statement:
    key = (model, alias, connection.vendor, conflict)
    if key not in _statements:
        meta = model._meta
        fields = [f for f in meta.concrete_fields if not f.primary_key]
        quote = connection.ops.quote_name
        columns = {f.name: quote(str(f.column)) for f in meta.concrete_fields}
        target = f"({', '.join(columns[n] for n in conflict)}) "
        row = f"VALUES ({', '.join(['%s'] * len(fields))}) "
        sql = (
            f"INSERT INTO {quote(meta.db_table)} "
            f"({', '.join(columns[f.name] for f in fields)}) {row}"
            f"ON CONFLICT {target if conflict else ''}DO NOTHING RETURNING {columns[meta.pk.name]}"
        )
        defaults = [_default(f, connection) for f in fields]
        _statements[key] = _Statement(sql, row, fields, defaults)
    return _statements[key]


def _plain_type(field: Any) -> type | None:
    """The type whose values ``field`` sends unchanged (text to text columns, whole numbers)."""
    if isinstance(field, models.JSONField | models.ForeignKey):
        return None
    if isinstance(field, models.CharField | models.TextField):
        return str
    if isinstance(field, models.IntegerField):  # the small and big ones too
        return int
    if isinstance(field, models.BooleanField):
        return bool
    return None


def _default(field: Any, connection: BaseDatabaseWrapper) -> Any:
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return _NOW
    if callable(field.default):
        return _UNSET
    return field.get_db_prep_save(field.get_default(), connection)


def _finds(connection: BaseDatabaseWrapper, query: tuple[str, list[Any]]) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(*query)
        return cursor.fetchone() is not None


def _insert_with_orm(
    model: type[models.Model], values: dict[str, Any], alias: str, conflict: tuple[str, ...]
) -> int | None:
    manager = model._default_manager.using(alias)
    try:
        with transaction.atomic(using=alias):
            return int(manager.create(**values).pk)
    except IntegrityError:
        if not conflict:
            return None  # the caller looks for the row that holds its keys
        if manager.filter(**{name: values[name] for name in conflict}).exists():
            return None
        raise
