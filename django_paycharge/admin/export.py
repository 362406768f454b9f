"""CSV export of the charge changelist, as filtered, for reconciliation.

One path on every database: rows are read in chunks from a database cursor
(``values_list``) and written out here as they come, so memory stays flat
however many charges match (``bench/run csv`` measures it). Lines end with
``\n``. Amounts are exact: minor units, and the same amount as a decimal with
the currency's ISO-4217 decimals. A text from outside never starts a formula
(:func:`neutral`, the one spelling of that rule). Each charge says where its
money is: its refund state, the amount refunded (its stored ``refunds_total``,
as in every list) and, for a successful charge, what is left to refund
(``services.refundable_amounts`` for the charges with a refund or a refund
request: two grouped queries a chunk at most, never one a row). No raw
payload, no credential, no bank account number.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.db import connections, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from .. import services
from ..models import Charge, ChargeActionRequest, Refund, refund_state
from ..money import to_major

#: (CSV header, model field). Amount columns are followed by their decimal form.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("charge_id", "gateway_id"),
    ("account", "account"),
    ("store_id", "store_id"),
    ("status", "status"),
    ("mode", "mode"),
    ("created_on", "created_on"),
    ("payment_type", "payment_type"),
    ("requested_amount", "requested_amount"),
    ("requested_currency", "requested_currency"),
    ("charged_amount", "charged_amount"),
    ("charged_currency", "charged_currency"),
    ("fee_amount", "fee_amount"),
    ("fee_currency", "fee_currency"),
    ("merchant_transaction_id", "merchant_transaction_id"),
    ("transaction_token_id", "transaction_token_id"),
    ("metadata", "metadata"),
)
_AMOUNTS = {"requested_amount", "charged_amount", "fee_amount"}
#: After the columns above: where the money is (amounts in the charged currency).
REFUND_COLUMNS = (
    "refund_state",
    "refunded_amount",
    "refunded_decimal",
    "left_to_refund",
    "left_to_refund_decimal",
)
CHUNK = 2000
# A spreadsheet runs a cell that starts with one of these as a formula ("CSV injection"):
# text from outside (metadata, merchant ids) gets a leading apostrophe instead.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NEUTRAL_PREFIX = "'"


def neutral(text: str) -> str:
    """``text`` as a cell a spreadsheet shows and never runs: the one spelling of the rule."""
    return NEUTRAL_PREFIX + text if text.startswith(FORMULA_START) else text


# json.dumps(value, ensure_ascii=False, sort_keys=True), without building an encoder a call.
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


class _Echo:
    """A file-like object that hands back what is written (csv.writer into a generator)."""

    def write(self, value: str) -> str:
        return value


# The csv module's line end is \r\n, which makes it quote a cell with a \r or a \n in it
# (with "\n" alone, a lone \r would go unquoted); the lines then end with \n.
_WRITE = csv.writer(_Echo()).writerow


def _line(cells: list[str]) -> str:
    return f"{_WRITE(cells)[:-2]}\n"


def header() -> list[str]:
    names: list[str] = []
    for name, field in COLUMNS:
        names.append(name)
        if field in _AMOUNTS:
            names.append(name.replace("_amount", "_decimal"))
    return [*names, *REFUND_COLUMNS]


def _json(value: Any) -> str:
    """A JSON value's cell: an object or an array as JSON (it starts with ``{`` or ``[``),
    true and false as JSON, a string or a number as its text, neutralised; null as nothing."""
    if value is None:
        return ""
    if isinstance(value, dict | list | bool):
        return _JSON(value)
    return neutral(str(value))


#: What each row is read as: :data:`COLUMNS`' fields, then these.
_FIELDS = (*(field for _name, field in COLUMNS), "pk", "refunds_total")
_AT = {field: at for at, field in enumerate(_FIELDS)}


Maker = Callable[[Sequence[Any]], str]


def _maker(at: int, kind: str) -> Maker:
    """How the cell of the field at ``at`` of a row is made, by the field's kind."""
    if kind in ("CharField", "TextField"):  # a text from outside
        return lambda row: "" if row[at] is None else neutral(row[at])
    if kind == "JSONField":
        return lambda row: _json(row[at])
    if kind == "DateTimeField":
        return lambda row: "" if row[at] is None else row[at].isoformat()
    if kind in ("UUIDField", "BigIntegerField"):  # hex digits and hyphens; a whole number
        return lambda row: "" if row[at] is None else str(row[at])
    raise ValueError(f"no cell for a {kind}")


def _major(at: int, currency: int) -> Maker:
    return lambda row: "" if row[at] is None else str(to_major(row[at], row[currency]))


def _cell_makers() -> list[Maker]:
    """For each cell of :data:`COLUMNS` (amounts: two), how it is made from a row."""
    makers: list[Maker] = []
    for _name, field in COLUMNS:
        at = _AT[field]
        makers.append(_maker(at, Charge._meta.get_field(field).get_internal_type()))
        if field in _AMOUNTS:
            makers.append(_major(at, _AT[field.replace("_amount", "_currency")]))
    return makers


_MAKERS = _cell_makers()
_STATUS, _PK, _CHARGED, _REFUNDED = (
    _AT[name] for name in ("status", "pk", "charged_amount", "refunds_total")
)
_CHARGED_CURRENCY, _REQUESTED_CURRENCY = _AT["charged_currency"], _AT["requested_currency"]


def _row(values: Sequence[Any], left: dict[int, int]) -> list[str]:
    """One charge's cells, in :func:`header`'s order (``left``: what is left to refund of
    the successful charges, by pk)."""
    cells = [make(values) for make in _MAKERS]
    refunded = int(values[_REFUNDED] or 0)
    currency = values[_CHARGED_CURRENCY] or values[_REQUESTED_CURRENCY]
    cells += [
        refund_state(values[_CHARGED], refunded),
        str(refunded),
        str(to_major(refunded, currency)),
    ]
    remaining = left.get(values[_PK])
    if remaining is None:
        return [*cells, "", ""]
    return [*cells, str(remaining), str(to_major(remaining, currency))]


def lines(queryset: QuerySet[Charge]) -> Iterator[bytes]:
    """The CSV text of ``queryset`` in UTF-8, a chunk of lines at a time, from a cursor.

    One transaction (on PostgreSQL in one snapshot where it begins here): what is
    left to refund, asked a chunk at a time, is of the same moment as the rows.
    """
    yield _line(header()).encode()
    alias = queryset.db
    connection = connections[alias]
    outer = connection.in_atomic_block
    with transaction.atomic(using=alias):
        if connection.vendor == "postgresql" and not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        selected = queryset.annotate(**{_ASKED: _asked()}).values_list(*_FIELDS, _ASKED)
        rows: Iterator[Sequence[Any]] = selected.iterator(chunk_size=CHUNK)
        while batch := list(itertools.islice(rows, CHUNK)):
            left = _left(batch, alias)
            yield "".join(_line(_row(values, left)) for values in batch).encode()


_ASKED = "export_refund_asked"


def _asked() -> Q:
    """Whether a charge has a refund or a refund request: only those are asked what is left
    to refund (the others have all they were charged)."""
    refunds = Refund.objects.filter(charge=OuterRef("pk"))
    requests = ChargeActionRequest.objects.filter(charge=OuterRef("pk"), kind="refund")
    return Exists(refunds) | Exists(requests)


def _left(batch: list[Sequence[Any]], alias: str) -> dict[int, int]:
    """What is left to refund of the successful charges of ``batch``, by pk."""
    successful = [v for v in batch if v[_STATUS] == "successful"]
    asked = {v[_PK]: v[_CHARGED] for v in successful if v[-1]}
    left = services.refundable_amounts(asked, using=alias)
    left.update((v[_PK], v[_CHARGED] or 0) for v in successful if not v[-1])
    return left


def csv_response(queryset: QuerySet[Charge]) -> StreamingHttpResponse:
    """A download of ``queryset`` as CSV (UTF-8 with a BOM, so spreadsheets read Japanese)."""

    def body() -> Iterator[bytes]:
        yield "\ufeff".encode()
        yield from lines(queryset)

    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = StreamingHttpResponse(body(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="charges-{stamp}.csv"'
    response["Cache-Control"] = "no-store"
    return response
