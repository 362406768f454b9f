"""Guarded bulk upsert of charges: three statements a page, whatever its size.

A page (up to 100 charges) is written in one transaction by the module of its
database (:mod:`._upsert_postgresql`, :mod:`._upsert_sqlite`), which says the
three statements: read and lock the rows already stored, in id order; insert
the new ones; rewrite the changed ones under the status-rank guard (a stale
read never takes a status backwards, even when another process wrote the row
after our lock). Unchanged rows are not rewritten, nor even encoded.

Signals are recorded in the page's transaction, once per row that really
changed (all of a page in one statement), and heard after it commits
(:mod:`.announced`, what every charge writer of the mirror says).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from decimal import Decimal
from types import ModuleType
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import JSONField
from django.utils import timezone
from django.utils.translation import gettext as _

from ...client import Charge as RemoteCharge
from ...client.parsing import ShapeError
from ...client.types import Rejected
from ...client.vocabulary import FINAL_RANK
from ...exceptions import ConfigurationError
from ...models import Charge
from ...models.compiled import Compiled
from ...models.loaded import loaded
from ...models.payload import PayloadEncoder
from . import postgresql as _upsert_postgresql
from . import sqlite as _upsert_sqlite
from .announced import announce_charges, charges_heard
from .rows import INSERT_COLUMNS, charge_row, json_row, raw_digest

__all__ = [
    "PreparedCharges",
    "UpsertResult",
    "WriteCounts",
    "prepare_charges",
    "prepare_page",
    "raw_digest",
    "upsert_charges",
]

logger = logging.getLogger("django_paycharge.services")

_STATEMENTS = {"postgresql": _upsert_postgresql, "sqlite": _upsert_sqlite}


@dataclass
class WriteCounts:
    """What writes of charges did: rows created, updated, left unchanged (same payload),
    and reads refused as stale (they would have taken a status backwards)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0

    def add(self, other: WriteCounts) -> None:
        """Count ``other``'s writes too."""
        for counter in fields(WriteCounts):
            setattr(self, counter.name, getattr(self, counter.name) + getattr(other, counter.name))


@dataclass
class UpsertResult(WriteCounts):
    """The counts of one upsert, and the stored rows by gateway id when asked for."""

    charges: dict[Any, Charge] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedCharges:
    """Charges read from the gateway, as rows of the mirror, ready to be written.

    Built by :func:`prepare_charges` without touching the database.
    """

    rows: dict[Any, dict[str, Any]]
    alias: str = DEFAULT_DB_ALIAS


def prepare_charges(
    items: Iterable[RemoteCharge],
    *,
    account: str,
    payment_types: dict[Any, str] | None = None,
    now: datetime | None = None,
    using: str = DEFAULT_DB_ALIAS,
    on_error: Callable[[RemoteCharge, Exception], object] | None = None,
) -> PreparedCharges:
    """The rows of charges read from the gateway; the last read of an id wins.

    With ``on_error``, a charge whose row cannot be built is handed to it and
    left out, instead of failing the whole page.
    """
    now = now or timezone.now()
    types = payment_types or {}
    rows = {}
    for item in items:
        try:
            rows[item.id] = charge_row(item, account, types.get(item.id, ""), now)
        except Exception as exc:
            if on_error is None:
                raise
            on_error(item, exc)
    return PreparedCharges(rows, using)


def prepare_page(
    items: Iterable[Any],
    *,
    account: str,
    keep: Callable[[datetime | None], bool],
    using: str = DEFAULT_DB_ALIAS,
    on_error: Callable[[Any, Exception], object],
) -> tuple[PreparedCharges, list[Rejected]]:
    """The rows of a list page's items, decoded once from the JSON the gateway sent.

    ``keep`` says by creation time which charges are the caller's (a sync's
    window). Items that are no charge at all (not an object, no usable id) are
    returned as :class:`Rejected`, as ``parse_page`` would; a charge whose row
    cannot be built is handed to ``on_error`` and left out.
    """
    now = timezone.now()
    rows, rejected = {}, []
    for item in items:
        try:
            row = json_row(item, account, "", now, exact=True)
        except ShapeError as exc:
            rejected.append(Rejected(raw=item, reason=str(exc)))
            continue
        except Exception as exc:
            on_error(item, exc)
            continue
        if keep(row["created_on"]):
            rows[row["gateway_id"]] = row
    if rejected:
        logger.warning("%d list item(s) could not be read: %s", len(rejected), rejected[0].reason)
    return PreparedCharges(rows, using), rejected


def upsert_charges(
    items: Iterable[RemoteCharge],
    *,
    account: str,
    payment_types: dict[Any, str] | None = None,
    load: bool = False,
    now: datetime | None = None,
    using: str = DEFAULT_DB_ALIAS,
    announce: bool = True,
    savepoint: bool = True,
) -> UpsertResult:
    """Store a page of charges read from the gateway. Returns counts (and rows when ``load``).

    ``announce=False`` stores it without a word to the shop's receivers (a
    first import of history: see ``sync_charges``). ``savepoint``: see
    :func:`upsert_prepared`.
    """
    prepared = prepare_charges(
        items, account=account, payment_types=payment_types, now=now, using=using
    )
    return upsert_prepared(prepared, load=load, announce=announce, savepoint=savepoint)


def upsert_prepared(
    prepared: PreparedCharges,
    *,
    load: bool = False,
    also: Callable[[], object] | None = None,
    announce: bool = True,
    background: bool = False,
    savepoint: bool = True,
) -> UpsertResult:
    """Write rows made ready by :func:`prepare_charges` (see :func:`upsert_charges`).

    ``also`` runs inside the page's transaction, after its statements: the
    sync moves its checkpoint there, so a page and its checkpoint commit together.
    ``background``: the page's receivers are heard by a task when work goes to a
    task backend (the sync's pages), not by this thread after the commit.
    ``savepoint=False``: for one row, inside a transaction of the caller's that
    is started again whole on an error (``retry_transient``): no savepoint to
    roll back to and store again from, two statements fewer on every read of
    a charge (one row has no order of locks to keep).
    """
    result = UpsertResult()
    events: list[tuple[Any, str | None]] = []
    for attempt in range(_ATTEMPTS if prepared.rows else 0):
        try:
            with transaction.atomic(using=prepared.alias, savepoint=savepoint):
                last = not savepoint or attempt + 1 == _ATTEMPTS
                result, events = _write(prepared, last=last)
                if also is not None:
                    also()
                if load:
                    result.charges = _load(prepared.alias, list(prepared.rows))
                # Announced with the page: recorded if and only if the page commits.
                if announce:
                    loaded = result.charges if load else None
                    _send_signals(events, loaded, prepared, background)
        except _LostRace:
            continue  # rolled back: the rows the other writer inserted are visible now
        break
    if also is not None and not prepared.rows:
        with transaction.atomic(using=prepared.alias):
            also()
    return result


def _load(alias: str, gateway_ids: list[Any]) -> dict[Any, Charge]:
    """The stored charges of ``gateway_ids``, by gateway id (as ``in_bulk`` gives them).

    Read with every charge a caller waits on (a capture's, a refresh's): compiled once.
    """
    columns = _charge_columns()
    padded = gateway_ids + gateway_ids[-1:] * (
        (1 << (len(gateway_ids) - 1).bit_length()) - len(gateway_ids)
    )
    charges = (Charge.from_db(alias, columns, row) for row in _BY_GATEWAY_ID.rows(alias, padded))
    return {charge.gateway_id: charge for charge in charges}


def _charge_columns() -> list[str]:
    return [f.attname for f in Charge._meta.concrete_fields]


_BY_GATEWAY_ID = Compiled(
    lambda ids: Charge.objects.filter(gateway_id__in=ids).values_list(*_charge_columns())
)


class _LostRace(Exception):
    """Another writer inserted some of our new rows meanwhile: store the page again."""


# Locking the rows another writer inserted, after inserting ours, broke the id
# order of the locks: two writers of overlapping pages deadlocked (found by the
# reliability suite's six-process test on PostgreSQL). The page is stored again
# instead, when those rows are visible to the ordered lock.
_ATTEMPTS = 3


def statements(conn: BaseDatabaseWrapper) -> ModuleType:
    """The module that writes pages on ``conn``'s database."""
    module = _STATEMENTS.get(conn.vendor)
    if module is None:
        raise ConfigurationError(
            _("django-paycharge stores charges on PostgreSQL or SQLite, not %(vendor)s.")
            % {"vendor": conn.vendor}
        )
    return module


def _lock_existing(
    sql: ModuleType, cursor: Any, ids: list[Any]
) -> dict[Any, tuple[str, int, str, str]]:
    """``{id: (status, status_rank, raw_digest, payment_type)}`` of the stored rows of ``ids``."""
    return {
        gid: (status, rank, digest, ptype)
        for gid, status, rank, digest, ptype in sql.lock_existing(cursor, ids)
    }


def _write(prepared: PreparedCharges, *, last: bool) -> tuple[UpsertResult, list[Any]]:
    rows, conn = prepared.rows, connections[prepared.alias]
    sql = statements(conn)
    encode = sql.row_encoder(conn)
    result, events = UpsertResult(), list[tuple[Any, str | None]]()
    with conn.cursor() as cursor:
        existing = _lock_existing(sql, cursor, list(rows))
        # Inserted in id order too, like the locks: two writers never wait on each other crosswise.
        new = sorted((gid for gid in rows if gid not in existing), key=str)
        if new:
            inserted = sql.insert_new(cursor, new, [rows[gid] for gid in new], encode, last=last)
            # Rows another writer inserted after our lock: store the page again while
            # another attempt remains (see _ATTEMPTS); on the last, lock them now and
            # treat them as updates.
            taken = [gid for gid in new if gid not in inserted]
            if taken and not last:
                raise _LostRace
            result.created += len(new) - len(taken)
            events.extend((gid, None) for gid in new if gid in inserted)
            if taken:
                existing.update(_lock_existing(sql, cursor, taken))
        changed: list[Any] = []
        confirmed_open: list[Any] = []
        for gid, (old_status, old_rank, old_digest, old_ptype) in existing.items():
            row = rows[gid]
            if row["status_rank"] < old_rank:
                result.stale += 1
            elif row["raw_digest"] == old_digest and (not row["payment_type"] or old_ptype):
                result.unchanged += 1
                if old_rank < FINAL_RANK:
                    confirmed_open.append(gid)
            else:
                changed.append(gid)
                events.append((gid, old_status))
        if changed:
            sql.update_changed(cursor, [encode(rows[gid]) for gid in changed])
            result.updated += len(changed)
    if confirmed_open:
        # Not rewritten, but confirmed now: the sync's refresh of open charges skips them.
        now = next(iter(rows.values()))["synced_at"]
        Charge.objects.using(prepared.alias).filter(gateway_id__in=confirmed_open).update(
            synced_at=now
        )
    return result, events


def _send_signals(
    events: list[tuple[Any, str | None]],
    loaded: dict[Any, Charge] | None,
    prepared: PreparedCharges,
    background: bool = False,
) -> None:
    if not events or not charges_heard():
        return
    charges = loaded or _announced(events, prepared)
    announce_charges(
        ((charges[gid], old_status) for gid, old_status in events if gid in charges),
        prepared.alias,
        background=background,
    )


def _announced(
    events: list[tuple[Any, str | None]], prepared: PreparedCharges
) -> dict[Any, Charge]:
    """The charges of ``events`` as stored: those this page inserted built from their rows
    (every column was written from them: only their keys are read), the others read.

    Reading a new row back cost a sync more than its own write (every column
    converted from the database's again); read from the alias just written:
    a replica could still hold the old rows.
    """
    charges = Charge.objects.using(prepared.alias)
    new = [gid for gid, old_status in events if old_status is None]
    keys = _keys(prepared.alias, new)
    built = {gid: _built(prepared.rows[gid], keys[gid], prepared.alias) for gid in keys}
    rest = [gid for gid, _old in events if gid not in built]
    return built | (charges.in_bulk(rest, field_name="gateway_id") if rest else {})


def _keys(alias: str, ids: list[Any]) -> dict[Any, Any]:
    """``{gateway id: key}`` of the stored charges of ``ids`` (written out by the module of the
    database: the ORM's compiling and converting cost a page more than the query)."""
    if not ids:
        return {}
    conn = connections[alias]
    with conn.cursor() as cursor:
        return dict(statements(conn).keys(cursor, ids))


def _built(row: dict[str, Any], pk: Any, alias: str) -> Charge:
    """The charge of ``row`` as reading it back would give it: its JSON as the database keeps
    it (a fraction the gateway sent comes back a float, not the row's ``Decimal``)."""
    values = _DEFAULTS | row
    for name in _JSON_FIELDS:
        value = values[name]
        if isinstance(value, str):  # encoded already (the raw payload)
            values[name] = json.loads(value)
        elif value is not None and not _plain(value):
            values[name] = json.loads(json.dumps(value, cls=PayloadEncoder))
    values[_PK] = pk
    return loaded(Charge, values, alias)


def _plain(value: Any) -> bool:
    """Whether decoded JSON holds only what reading it back gives (no ``Decimal``)."""
    if isinstance(value, dict):
        return all(_plain(item) for item in value.values())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return not isinstance(value, Decimal)


_JSON_FIELDS = [f.name for f in Charge._meta.concrete_fields if isinstance(f, JSONField)]
_PK = Charge._meta.pk.attname
#: What a new row holds in the columns a page does not write (see mirror/rows.py).
_DEFAULTS = {f.attname: f.get_default() for f in Charge._meta.concrete_fields}
# A row's keys are its columns' attributes (no foreign key renames one): ``_DEFAULTS | row``
# has every attribute and nothing else.
assert set(INSERT_COLUMNS) <= set(_DEFAULTS)
