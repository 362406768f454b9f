"""What a row of the mirror is: a charge read from the gateway, as column values.

A row is built from the charge's JSON as the gateway sent it, in one pass
(:func:`json_row`), by the client's own readers of each field
(``client.parsing``): the sync decodes a page once into exactly what it
writes, without typing each charge into a client ``Charge`` first; a typed
``Charge`` (a single read, a create) becomes the row of its ``raw``, the same
way. Shared by the page writers of each database (``postgresql``,
``sqlite``): they differ in how a page of these rows reaches the
database, never in what a row holds.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, cast

from django.db import models

from ...client import Charge as RemoteCharge
from ...client.parsing import (
    _bool,
    _datetime,
    _decimal,
    _dict,
    _int,
    _object,
    _required_uuid,
    _text,
    _uuid,
)
from ...client.types import JSONObject
from ...client.vocabulary import CHARGE_FIELDS, LISTED_ONLY_CHARGE_FIELDS, status_rank
from ...models import Charge
from ...models.fit import column_fits, without_nul
from .canonical import canonical, standard

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

#: How each column is read from the charge's JSON: the readers ``parse_charge`` types the
#: same fields with (a nested object is kept as the JSON object it was sent as).
_READERS: dict[str, Any] = {
    "store_id": _uuid,
    "transaction_token_id": _uuid,
    "transaction_token_type": _text,
    "subscription_id": _uuid,
    "merchant_transaction_id": _text,
    "requested_amount": _int,
    "requested_currency": _text,
    "requested_amount_formatted": _decimal,
    "charged_amount": _int,
    "charged_currency": _text,
    "charged_amount_formatted": _decimal,
    "fee_amount": _int,
    "fee_currency": _text,
    "fee_amount_formatted": _decimal,
    "only_direct_currency": _bool,
    "capture_at": _datetime,
    "descriptor": _text,
    "descriptor_phone_number": _text,
    "status": _text,
    "error": _dict,
    "metadata": _dict,
    "mode": _text,
    "created_on": _datetime,
    "redirect": _dict,
    "merchant_name": _text,
    "store_name": _text,
    "three_ds": _dict,
}
assert set(_READERS) == set(CHARGE_FIELDS)
# Unknown stays unknown (NULL), and so does a value too big for its column (models.fit).
_FITS = {name: fit for name, fit in column_fits(Charge).items() if name in _READERS}
#: Readers that return a value of this type as it is: such a value is not passed to them.
_KEPT: dict[Any, type] = {_text: str, _int: int, _dict: dict, _bool: bool}
#: Per field: its reader, the type it keeps as it is (or None), its fit (or None).
_READ = tuple(
    (name, _READERS[name], _KEPT.get(_READERS[name]), _FITS.get(name)) for name in CHARGE_FIELDS
)


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


def raw_digest(raw: dict[str, Any]) -> str:
    """A short digest of a payload: equal digests mean an unchanged charge."""
    return _digest_of_text(standard(raw))


def _digest_of_text(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def charge_row(
    item: RemoteCharge, account: str, payment_type: str, now: datetime
) -> dict[str, Any]:
    """The row of ``item``: every column of :data:`INSERT_COLUMNS` (see :func:`json_row`)."""
    # A typed charge's JSON may come from a webhook's body, decoded with floats.
    return json_row(item.raw, account, payment_type, now, exact=False)


def json_row(
    value: Any, account: str, payment_type: str, now: datetime, *, exact: bool = False
) -> dict[str, Any]:
    """The row of a charge's JSON as the gateway sent it: every column of :data:`INSERT_COLUMNS`.

    ``exact``: ``value`` was decoded with ``parse_float=Decimal`` (see
    :func:`.canonical.canonical`). Raises
    :class:`~django_paycharge.client.parsing.ShapeError` for what is not a
    charge at all (not an object, no usable ``id``), as ``parse_charge`` does.
    """
    d: JSONObject = _object(value, "the charge")
    gateway_id = _required_uuid(d.get("id"), "id")
    get = d.get
    row: dict[str, Any] = {}
    for name, read, kept, fit in _READ:  # a charge's fields, once a page's 100 charges
        value = get(name)
        if value is not None:
            if type(value) is not kept:
                value = read(value)
            if fit is not None and value is not None:
                value = fit(value)
        row[name] = value
    text = canonical(d, exact=exact)
    row.update(
        gateway_id=gateway_id,
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
        row["raw"] = d
        row = {name: without_nul(value) for name, value in row.items()}
    return row
