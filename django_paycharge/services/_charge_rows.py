"""What a row of the mirror is: a charge read from the gateway, as column values.

Shared by the page writers of each database (``_upsert_postgresql``,
``_upsert_sqlite``): they differ in how a page of these rows reaches the
database, never in what a row holds.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, cast

from django.db import models

from ..client import Charge as RemoteCharge
from ..client.vocabulary import CHARGE_FIELDS, LISTED_ONLY_CHARGE_FIELDS, status_rank
from ..models import Charge
from ..models.fit import fit_row, without_nul
from ..models.payload import PayloadEncoder

# A newer read rewrites the charge's fields. ``payment_type`` is only written
# when the caller knows it (a list page does not carry it).
INSERT_COLUMNS = (
    "gateway_id",
    "account",
    "payment_type",
    *CHARGE_FIELDS,
    "status_rank",
    "raw",
    "raw_digest",
    "synced_at",
    "first_seen_at",
)
UPDATE_COLUMNS = (*CHARGE_FIELDS, "status_rank", "raw", "raw_digest", "synced_at")
#: The columns the page's lock reads back, in this order.
LOCK_COLUMNS = ("gateway_id", "status", "status_rank", "raw_digest", "payment_type")

_NESTED = ("error", "redirect", "three_ds")


def set_changed(table: str, quote: Any) -> str:
    """``DO UPDATE SET ... WHERE`` of a page's update: the same text on every database.

    The ``WHERE`` guard keeps a stale read from taking a status backwards, even
    when another process wrote the row after the page's lock was read.
    """
    assignments = [
        f"{quote(c)} = COALESCE(EXCLUDED.{quote(c)}, {table}.{quote(c)})"
        if c in LISTED_ONLY_CHARGE_FIELDS  # a single read lacks them: a list said
        else f"{quote(c)} = EXCLUDED.{quote(c)}"
        for c in UPDATE_COLUMNS
    ]
    assignments.append(
        "payment_type = CASE WHEN EXCLUDED.payment_type <> '' THEN EXCLUDED.payment_type "
        f"ELSE {table}.payment_type END"
    )
    return (
        f"DO UPDATE SET {', '.join(assignments)} WHERE {table}.status_rank <= EXCLUDED.status_rank"
    )


def field(name: str) -> models.Field[Any, Any]:
    return cast("models.Field[Any, Any]", Charge._meta.get_field(name))


class EncodedJSON(str):
    """The value of a JSON column, already encoded as its field's encoder would."""

    __slots__ = ()


# The JSON a JSONField of the mirror would write (PayloadEncoder), with sorted keys:
# one encoding of a payload serves as its digest's input and as the stored value.
_CANONICAL = PayloadEncoder(sort_keys=True, separators=(",", ":"))


def raw_digest(raw: dict[str, Any]) -> str:
    """A short digest of a payload: equal digests mean an unchanged charge."""
    return _digest_of_text(_CANONICAL.encode(raw))


def _digest_of_text(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def charge_row(
    item: RemoteCharge, account: str, payment_type: str, now: datetime
) -> dict[str, Any]:
    """The row of ``item``: every column of :data:`INSERT_COLUMNS`."""
    row = {name: getattr(item, name) for name in CHARGE_FIELDS}
    # Nested objects are stored as the JSON the gateway sent.
    for name in _NESTED:
        value = row[name]
        row[name] = value.raw if value is not None else None
    # Unknown stays unknown (NULL), and so does a value too big for its column.
    fit_row(Charge, row)
    text = _CANONICAL.encode(item.raw)
    row.update(
        gateway_id=item.id,
        account=account,
        payment_type=payment_type,
        status_rank=status_rank(row["status"]),
        raw=EncodedJSON(text),
        raw_digest=_digest_of_text(text),  # of what the gateway sent, even if cleaned below
        synced_at=now,
        first_seen_at=now,
    )
    # PostgreSQL refuses NUL in text and JSON: one such charge would fail its whole
    # page on every sync. Rare, so the digest's JSON text decides whether to look.
    if "\\u0000" in text:
        row["raw"] = item.raw
        row = {name: without_nul(value) for name, value in row.items()}
    return row
