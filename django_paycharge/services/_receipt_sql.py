"""Store one webhook delivery in one statement: ``INSERT ... ON CONFLICT DO NOTHING RETURNING``.

Why not ``objects.create()``: receiving a delivery is the request the gateway
waits on, and its cost is measured against a minimal view that checks the
header and inserts one row (``bench/webhooks.py``, "receipt cost"; figures in
docs/benchmarks.md). The ORM's insert compiler costs more CPU per delivery
than this statement, and a repeat through ``create()`` costs an
``IntegrityError`` and a second query. Here a repeat is one statement that
returns no row.

The statement is built once per database from the model's own fields (their
columns and ``get_db_prep_save``), so a field added to the model is written
here too. Databases without ``ON CONFLICT ... RETURNING`` (SQLite before
3.35, others) take the ORM's way.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, UniqueConstraint

from ..models import WebhookDelivery

# (alias, vendor) -> (SQL, fields in the order of its placeholders, and for each
# field the database value of its default when that is a constant, else _UNSET)
_statements: dict[tuple[str, str], tuple[str, list[Field[Any, Any]], list[Any]]] = {}
_UNSET = object()


def insert_delivery(values: dict[str, Any]) -> int | None:
    """Insert a delivery; its id, or None when its (account, dedupe_key) is already stored.

    ``values`` maps field names to values; other fields get their defaults.
    Runs in autocommit: the row is committed when this returns.
    """
    alias = router.db_for_write(WebhookDelivery)
    connection = connections[alias]
    if not _has_upsert(connection):
        return _insert_with_orm(values, alias)
    sql, fields, defaults = _statement(alias, connection)
    params = [
        field.get_db_prep_save(values[field.name], connection)
        if field.name in values
        else default
        if default is not _UNSET
        else field.get_db_prep_save(field.get_default(), connection)
        for field, default in zip(fields, defaults, strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return int(row[0]) if row else None


def _has_upsert(connection: BaseDatabaseWrapper) -> bool:
    return connection.vendor in ("postgresql", "sqlite") and bool(
        connection.features.can_return_columns_from_insert
    )


def _statement(
    alias: str, connection: BaseDatabaseWrapper
) -> tuple[str, list[Field[Any, Any]], list[Any]]:
    key = (alias, connection.vendor)
    if key not in _statements:
        meta = WebhookDelivery._meta
        fields = [f for f in meta.concrete_fields if not f.primary_key]
        quote = connection.ops.quote_name
        columns = {f.name: quote(str(f.column)) for f in meta.concrete_fields}
        unique = next(
            c
            for c in meta.constraints
            if isinstance(c, UniqueConstraint) and c.name == "paycharge_delivery_once"
        )
        sql = (
            f"INSERT INTO {quote(meta.db_table)} "  # noqa: S608 - names, not values
            f"({', '.join(columns[f.name] for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) "
            f"ON CONFLICT ({', '.join(columns[n] for n in unique.fields)}) "
            f"DO NOTHING RETURNING {columns[meta.pk.name]}"
        )
        defaults = [
            _UNSET if callable(f.default) else f.get_db_prep_save(f.get_default(), connection)
            for f in fields
        ]
        _statements[key] = (sql, fields, defaults)
    return _statements[key]


def _insert_with_orm(values: dict[str, Any], alias: str) -> int | None:
    try:
        with transaction.atomic(using=alias):
            return int(WebhookDelivery.objects.using(alias).create(**values).pk)
    except IntegrityError:
        account, key = values["account"], values["dedupe_key"]
        if WebhookDelivery.objects.using(alias).filter(account=account, dedupe_key=key).exists():
            return None
        raise
