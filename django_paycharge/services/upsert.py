"""Guarded bulk upsert of charges: a constant number of queries per page.

One page (up to 100 charges) costs: one ``SELECT ... FOR UPDATE`` of the rows
already stored, one ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` for the new
ones, and one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` for the changed
ones. The ``WHERE`` guard keeps a stale read from taking a status backwards
even when another process wrote the row after our ``SELECT``.

Signals are sent after the transaction commits, once per row that really
changed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from .. import signals
from ..client import Charge as RemoteCharge
from ..models import FINAL_STATUSES, Charge, status_rank
from ..models.fit import fit_row
from ..models.payload import PayloadEncoder
from . import _upsert_sql as _sql

logger = logging.getLogger("django_paycharge.services")

# Columns rewritten when a newer read arrives. ``payment_type`` is only written
# when the caller knows it (a list page does not carry it).
_MIRRORED = (
    "store_id",
    "transaction_token_id",
    "transaction_token_type",
    "subscription_id",
    "merchant_transaction_id",
    "requested_amount",
    "requested_currency",
    "requested_amount_formatted",
    "charged_amount",
    "charged_currency",
    "charged_amount_formatted",
    "fee_amount",
    "fee_currency",
    "fee_amount_formatted",
    "only_direct_currency",
    "capture_at",
    "descriptor",
    "descriptor_phone_number",
    "status",
    "error",
    "metadata",
    "mode",
    "created_on",
    "redirect",
    "merchant_name",
    "store_name",
    "three_ds",
)
_INSERT_COLUMNS = (
    "gateway_id",
    "account",
    "payment_type",
    *_MIRRORED,
    "status_rank",
    "raw",
    "raw_digest",
    "synced_at",
    "first_seen_at",
)
_FINAL_RANK = status_rank(next(iter(FINAL_STATUSES)))
_NESTED = ("error", "redirect", "three_ds")
_UPDATE_COLUMNS = (*_MIRRORED, "status_rank", "raw", "raw_digest", "synced_at")


@dataclass
class UpsertResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0
    charges: dict[Any, Charge] = field(default_factory=dict)

    def add(self, other: UpsertResult) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.stale += other.stale


def raw_digest(raw: dict[str, Any]) -> str:
    """A short digest of a payload: equal digests mean an unchanged charge."""
    return _digest_of_text(_canonical_json(raw))


# The JSON a JSONField of the mirror would write (PayloadEncoder), with sorted keys:
# one encoding of a payload serves as its digest's input and as the stored value.
_CANONICAL = PayloadEncoder(sort_keys=True, separators=(",", ":"))


def _canonical_json(raw: dict[str, Any]) -> str:
    return _CANONICAL.encode(raw)


def _digest_of_text(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class PreparedCharges:
    """Charges read from the gateway, turned into rows (and encoded) ready to be written.

    Built by :func:`prepare_charges` without touching the database, so it can be
    done for the next page while the current one is written.
    """

    rows: dict[Any, dict[str, Any]]
    encoded: dict[Any, Any]
    alias: str

    def encoded_rows(self, conn: BaseDatabaseWrapper, ids: Sequence[Any]) -> list[Any]:
        """The encoded rows of ``ids``, encoding now those not encoded in advance."""
        missing = [gid for gid in ids if gid not in self.encoded]
        if missing:
            encode = _sql.row_encoder(conn, _INSERT_COLUMNS)
            self.encoded.update((gid, encode(self.rows[gid])) for gid in missing)
        return [self.encoded[gid] for gid in ids]


def prepare_charges(
    items: Iterable[RemoteCharge],
    *,
    account: str,
    payment_types: dict[Any, str] | None = None,
    now: datetime | None = None,
    using: str = DEFAULT_DB_ALIAS,
    encode: bool = True,
    share_gil: bool = False,
) -> PreparedCharges:
    """Rows of charges read from the gateway, encoded for database ``using``.

    ``encode=False`` leaves the encoding to the write, which then encodes only
    the rows it writes: cheaper when most rows turn out unchanged.
    ``share_gil=True`` (a helper thread preparing the next page while another
    writes) lets that other thread run every few rows: see :data:`_SHARE_EVERY`.
    """
    now = now or timezone.now()
    payment_types = payment_types or {}
    share = _SHARE_EVERY if share_gil else 0
    rows: dict[Any, dict[str, Any]] = {}
    for n, item in enumerate(items, 1):  # the last read of an id within one page wins
        rows[item.id] = _row(item, account, payment_types.get(item.id, ""), now)
        if share and n % share == 0:
            time.sleep(0)
    encoded: dict[Any, Any] = {}
    if encode:
        encode_row = _sql.row_encoder(connections[using], _INSERT_COLUMNS)
        for n, (gid, row) in enumerate(rows.items(), 1):
            encoded[gid] = encode_row(row)
            if share and n % share == 0:
                time.sleep(0)
    return PreparedCharges(rows=rows, encoded=encoded, alias=using)


# A thread waiting for the GIL (the sync's writer, whose statement just came
# back from the database) runs when the holder sleeps, or after Python's 5 ms
# switch interval: every 10 rows (about 0.5 ms of work) it waits less than
# that, and the sleeps (about 60 us each, the kernel's timer slack) cost
# little. After every row they cost more than they saved.
_SHARE_EVERY = 10


def upsert_charges(
    items: Iterable[RemoteCharge],
    *,
    account: str,
    payment_types: dict[Any, str] | None = None,
    load: bool = False,
    now: datetime | None = None,
    using: str = DEFAULT_DB_ALIAS,
) -> UpsertResult:
    """Store a page of charges read from the gateway. Returns counts (and rows when ``load``)."""
    prepared = prepare_charges(
        items, account=account, payment_types=payment_types, now=now, using=using
    )
    return upsert_prepared(prepared, load=load)


def upsert_prepared(prepared: PreparedCharges, *, load: bool = False) -> UpsertResult:
    """Write charges made ready by :func:`prepare_charges`: see :func:`upsert_charges`."""
    result = UpsertResult()
    events: list[tuple[str, Any, str | None]] = []
    for attempt in range(_ATTEMPTS if prepared.rows else 0):
        result, events = UpsertResult(), []
        try:
            with transaction.atomic(using=prepared.alias):
                _write(prepared, result, events, retry_lost=attempt + 1 < _ATTEMPTS)
                if load:
                    result.charges = Charge.objects.using(prepared.alias).in_bulk(
                        list(prepared.rows), field_name="gateway_id"
                    )
        except _LostRace:
            continue  # rolled back: the rows the other writer inserted are visible now
        break
    _send_signals(events, result.charges if load else None, prepared.alias)
    return result


class _LostRace(Exception):
    """Another writer inserted some of our new rows meanwhile: store the page again."""


# Locking the rows another writer inserted, after inserting ours, broke the id
# order of the locks: two writers of overlapping pages deadlocked (found by the
# reliability suite's six-process test on PostgreSQL). The page is stored again
# instead, when those rows are visible to the ordered SELECT ... FOR UPDATE.
_ATTEMPTS = 3


def _row(item: RemoteCharge, account: str, payment_type: str, now: datetime) -> dict[str, Any]:
    row = {name: getattr(item, name) for name in _MIRRORED}
    # Nested objects are stored as the JSON the gateway sent.
    for name in _NESTED:
        value = row[name]
        row[name] = value.raw if value is not None else None
    # Unknown stays unknown (NULL), and so does a value too big for its column.
    fit_row(Charge, row)
    text = _canonical_json(item.raw)
    row.update(
        gateway_id=item.id,
        account=account,
        payment_type=payment_type,
        status_rank=status_rank(row["status"]),
        raw=_sql.EncodedJSON(text),
        raw_digest=_digest_of_text(text),  # of what the gateway sent, even if cleaned below
        synced_at=now,
        first_seen_at=now,
    )
    # PostgreSQL refuses NUL in text and JSON: one such charge would fail its whole
    # page on every sync. Rare, so the digest's JSON text decides whether to look.
    if "\\u0000" in text:
        row["raw"] = item.raw
        row = {name: _without_nul(value) for name, value in row.items()}
    return row


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def _write(
    prepared: PreparedCharges,
    result: UpsertResult,
    events: list[tuple[str, Any, str | None]],
    *,
    retry_lost: bool = False,
) -> None:
    rows, conn = prepared.rows, connections[prepared.alias]
    existing = _lock_existing(conn, list(rows))
    # Inserted in id order too, like the locks: two writers never wait on each other crosswise.
    new = sorted((gid for gid in rows if gid not in existing), key=str)
    if new:
        # While another attempt remains, the row count says whether another writer got
        # some in first (start again); the last attempt reads back which ids were new.
        inserted = _insert_new(conn, prepared.encoded_rows(conn, new), new, all_or_none=retry_lost)
        # Rows another process inserted after our SELECT: start again (see _ATTEMPTS), or
        # on the last attempt lock them here and treat them as updates.
        lost = [gid for gid in new if gid not in inserted]
        if lost and retry_lost:
            raise _LostRace
        result.created += len(inserted)
        events.extend(("created", gid, None) for gid in inserted)
        if lost:
            existing.update(_lock_existing(conn, lost))
    changed: list[Any] = []  # ids
    confirmed_open: list[Any] = []
    for gid, (old_status, old_rank, old_digest, old_ptype) in existing.items():
        row = rows[gid]
        if row["status_rank"] < old_rank:
            result.stale += 1
        elif row["raw_digest"] == old_digest and (not row["payment_type"] or old_ptype):
            result.unchanged += 1
            if old_rank < _FINAL_RANK:
                confirmed_open.append(gid)
        else:
            changed.append(gid)
            events.append(("updated", gid, old_status))
    if changed:
        _update_changed(conn, prepared.encoded_rows(conn, changed))
        result.updated += len(changed)
    if confirmed_open:
        # Not rewritten, but confirmed now: the sync's refresh of open charges skips them.
        now = next(iter(rows.values()))["synced_at"]
        Charge.objects.using(prepared.alias).filter(gateway_id__in=confirmed_open).update(
            synced_at=now
        )


def _lock_existing(
    conn: BaseDatabaseWrapper, ids: Sequence[Any]
) -> dict[Any, tuple[str, int, str, str]]:
    return _sql.lock_existing(conn, ids)


def _insert_new(
    conn: BaseDatabaseWrapper, encoded: Sequence[Any], ids: Sequence[Any], *, all_or_none: bool
) -> set[Any]:
    """Insert the rows ``encoded`` (of ``ids``); returns the ids that were new.

    ``all_or_none`` reads only the row count, cheaper than reading back the ids:
    a short count (another writer got some in first) returns none of them.
    """
    field = _sql.field("gateway_id")
    returning = "" if all_or_none else " RETURNING gateway_id"
    inserted: set[Any] = set()
    count = 0
    with _sql.page_cursor(conn) as cursor:
        for source, params in _sql.row_sources(conn, encoded, _INSERT_COLUMNS):
            cursor.execute(_insert_sql(conn, source, "DO NOTHING" + returning), params)
            if all_or_none:
                count += cursor.rowcount
            else:
                inserted.update(field.to_python(value) for (value,) in cursor.fetchall())
    if all_or_none:
        return set(ids) if count == len(ids) else set()
    return inserted


def _update_changed(conn: BaseDatabaseWrapper, encoded: Sequence[Any]) -> None:
    quote = conn.ops.quote_name
    table = quote(Charge._meta.db_table)
    assignments = [f"{quote(c)} = EXCLUDED.{quote(c)}" for c in _UPDATE_COLUMNS]
    assignments.append(
        "payment_type = CASE WHEN EXCLUDED.payment_type <> '' THEN EXCLUDED.payment_type "
        f"ELSE {table}.payment_type END"
    )
    update = (
        f"DO UPDATE SET {', '.join(assignments)} WHERE {table}.status_rank <= EXCLUDED.status_rank"
    )
    with _sql.page_cursor(conn) as cursor:
        for source, params in _sql.row_sources(conn, encoded, _INSERT_COLUMNS):
            cursor.execute(_insert_sql(conn, source, update), params)


def _insert_sql(conn: BaseDatabaseWrapper, source: str, on_conflict: str) -> str:
    table = conn.ops.quote_name(Charge._meta.db_table)
    # Only model metadata and placeholders are interpolated; values go as parameters.
    return (
        f"INSERT INTO {table} ({_sql.column_list(conn, _INSERT_COLUMNS)}) {source} "
        f"ON CONFLICT (gateway_id) {on_conflict}"
    )


def _send_signals(
    events: list[tuple[str, Any, str | None]], loaded: dict[Any, Charge] | None, alias: str
) -> None:
    receivers = signals.charge_updated.has_listeners(
        Charge
    ) or signals.charge_status_changed.has_listeners(Charge)
    if not events or not receivers:
        return
    # Read from the alias just written: a replica could still hold the old rows.
    charges = loaded or Charge.objects.using(alias).in_bulk(
        [gid for _, gid, _ in events], field_name="gateway_id"
    )
    for _kind, gid, old_status in events:
        charge = charges.get(gid)
        if charge is None:
            continue
        # One failing receiver stops neither the others nor the signals of the page's
        # other charges (the change is committed and will not be seen again).
        signals.send(
            signals.charge_updated,
            sender=Charge,
            using=alias,
            charge=charge,
            previous_status=old_status,
        )
        if old_status != charge.status:
            signals.send(
                signals.charge_status_changed,
                sender=Charge,
                using=alias,
                charge=charge,
                previous_status=old_status,
                status=charge.status,
            )
