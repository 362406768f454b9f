"""The rows of changes announced together (a page of a sync), inserted in one statement.

What the rows of one batch share (sender, times, status, claim) is bound
once; only what differs (event id, signal, receiver, arguments) is bound a
row: ``INSERT ... SELECT ... FROM (VALUES ...) RETURNING`` (on PostgreSQL the rows come as
one JSON array, ``jsonb_array_elements``). The ORM's
``bulk_create`` prepared every field of every row, and on SQLite split a
page into two statements (its bound on parameters): most of what a receiver
cost a sync before it even ran (``bench/run receivers``). A database that
cannot return the rows of a multi-row insert gets ``bulk_create``.
"""

from __future__ import annotations

import json
from operator import attrgetter
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from ..models import Announcement
from ..models.payload import PayloadEncoder

#: Bound a row; the other columns are the batch's.
PER_ROW = ("event_id", "signal", "receiver", "arguments")
SHARED = (
    "sender",
    "created_at",
    "status",
    "attempts",
    "last_error",
    "processed_at",
    "claimed_at",
    "lease_until",
    "claimed_by",
)
_shared = attrgetter(*SHARED)


def insert_rows(rows: list[Announcement], using: str) -> list[Announcement]:
    """Insert ``rows`` (one batch: their ``SHARED`` values are the same); set their keys."""
    conn = connections[using]
    shared = _shared(rows[0])
    alike = all(_shared(row) == shared for row in rows)  # a tuple a row: a name a row cost more
    if not alike or not conn.features.can_return_rows_from_bulk_insert:
        return Announcement.objects.using(using).bulk_create(rows)
    fields = {f.name: f for f in Announcement._meta.concrete_fields}
    bound = min(conn.features.max_query_params or 65535, 65535)  # PostgreSQL's protocol
    per_statement = max(1, (bound - len(SHARED)) // len(PER_ROW))
    for start in range(0, len(rows), per_statement):
        _insert(conn, fields, rows[start : start + per_statement])
    return rows


def _insert(conn: BaseDatabaseWrapper, fields: dict[str, Any], rows: list[Announcement]) -> None:
    quote = conn.ops.quote_name
    shared: list[Any] = []
    shared_picks = []
    for name in SHARED:
        value = fields[name].get_db_prep_save(getattr(rows[0], name), conn)
        shared_picks.append("NULL" if value is None else "%s")
        shared += [] if value is None else [value]
    if conn.vendor == "postgresql":
        # The rows as one JSON array, one parameter: binding four a row cost the client
        # three times the CPU (``bench/run receivers``).
        source = "jsonb_array_elements(%s::jsonb) AS v"
        picks = ["(v->>0)::uuid", "v->>1", "v->>2", "v->3"]
        page = [[row.event_id.hex, row.signal, row.receiver, row.arguments] for row in rows]
        params: list[Any] = [json.dumps(page, cls=PayloadEncoder)]
        events: list[Any] = [row.event_id for row in rows]  # as the database returns them
    else:
        source = "(VALUES " + ", ".join(["(%s, %s, %s, %s)"] * len(rows)) + ") AS v"
        picks = [f"v.column{n}" for n in range(1, len(PER_ROW) + 1)]
        params, events = [], []
        native = conn.features.has_native_uuid_field
        texts: dict[int, str] = {}  # an event's receivers share their arguments: encoded once
        for row in rows:
            text = texts.get(id(row.arguments))
            if text is None:
                text = texts[id(row.arguments)] = json.dumps(row.arguments, cls=PayloadEncoder)
            event = row.event_id if native else row.event_id.hex
            params += [event, row.signal, row.receiver, text]
            events.append(event)  # comes back as it was bound: no parsing a row
    columns = ", ".join(quote(fields[name].column) for name in (*PER_ROW, *SHARED))
    meta = Announcement._meta
    returned = ", ".join(quote(fields[n].column) for n in ("id", "event_id", "receiver"))
    statement = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) "  # noqa: S608 - names only
        f"SELECT {', '.join([*picks, *shared_picks])} FROM {source} RETURNING {returned}"
    )
    with conn.cursor() as cursor:
        # The shared values come first in the text (the select list), the rows' after.
        cursor.execute(statement, [*shared, *params])
        keys = {(event, receiver): pk for pk, event, receiver in cursor.fetchall()}
    for row, event in zip(rows, events, strict=True):
        row.pk = keys[event, row.receiver]
        row._state.adding, row._state.db = False, conn.alias
