"""CSV export of the charge changelist, as filtered, for reconciliation.

One path on every database: rows are read in chunks from a database cursor
(``values_list``) and written out here as they come, so memory stays flat
however many charges match (``bench/run csv`` measures it). A chunk is made a
column at a time (one comprehension a column, no function call a cell where the
csv module's own text of a value is the cell) and written by one ``writerows``. Lines end with
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from django.db import connections, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from .. import services
from ..models import Charge, ChargeActionRequest, Refund, refund_state
from ..money import currency_exponent, major_text

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


_ASKED = "export_refund_asked"
#: What each row is read as: :data:`COLUMNS`' fields, then these (``_ASKED``: :func:`_asked`).
_FIELDS = (*(field for _name, field in COLUMNS), "pk", "refunds_total", _ASKED)
_AT = {field: at for at, field in enumerate(_FIELDS)}

#: A chunk of rows read column by column (``zip(*rows)``), in :data:`_FIELDS`' order.
Columns = Sequence[Sequence[Any]]
#: How one column of cells is made from a chunk's columns.
Maker = Callable[[Columns], Sequence[Any]]


def _maker(field: str) -> Maker:
    """How the cells of ``field`` are made, by its kind. The csv module writes None as an
    empty cell and a whole number or a UUID as its text (hex digits and hyphens): those
    columns go out as they are read."""
    at = _AT[field]
    kind = Charge._meta.get_field(field).get_internal_type()
    if kind in ("CharField", "TextField"):  # a text from outside; None and "" stay empty
        return lambda columns: [text and neutral(text) for text in columns[at]]
    if kind == "JSONField":
        return lambda columns: [_json(value) for value in columns[at]]
    if kind == "DateTimeField":
        return lambda columns: [value and value.isoformat() for value in columns[at]]
    if kind in ("UUIDField", "BigIntegerField"):
        return lambda columns: columns[at]
    raise ValueError(f"no cell for a {kind}")


def _decimals(amounts: Sequence[int | None], currencies: Sequence[str | None]) -> list[str]:
    """Each amount as a decimal with its currency's ISO-4217 decimals (``""`` for none)."""
    exponents = {currency: currency_exponent(currency) for currency in set(currencies)}
    return [
        "" if amount is None else major_text(amount, exponents[currency])
        for amount, currency in zip(amounts, currencies, strict=True)
    ]


def _decimal_maker(field: str) -> Maker:
    amounts, currencies = _AT[field], _AT[field.replace("_amount", "_currency")]
    return lambda columns: _decimals(columns[amounts], columns[currencies])


def _makers() -> list[Maker]:
    """For each cell of :data:`COLUMNS` (amounts: two), how its column is made."""
    makers: list[Maker] = []
    for _name, field in COLUMNS:
        makers.append(_maker(field))
        if field in _AMOUNTS:
            makers.append(_decimal_maker(field))
    return makers


_MAKERS = _makers()


def _refund_cells(columns: Columns, alias: str) -> list[Sequence[Any]]:
    """:data:`REFUND_COLUMNS`' columns of a chunk: refunded amounts in the charged currency
    (the requested one when none was charged); what is left to refund of the successful
    charges, asked (:func:`_left`) only of those with a refund or a refund request."""
    charged = columns[_AT["charged_amount"]]
    refunded = [int(amount or 0) for amount in columns[_AT["refunds_total"]]]
    currencies = [
        charged_currency or requested_currency
        for charged_currency, requested_currency in zip(
            columns[_AT["charged_currency"]], columns[_AT["requested_currency"]], strict=True
        )
    ]
    states = [
        refund_state(amount, total) if total else ""
        for amount, total in zip(charged, refunded, strict=True)
    ]
    left_by_pk = _left(columns, alias)
    left = [left_by_pk.get(pk) for pk in columns[_AT["pk"]]]
    return [states, refunded, _decimals(refunded, currencies), left, _decimals(left, currencies)]


def _left(columns: Columns, alias: str) -> dict[int, int]:
    """What is left to refund of a chunk's successful charges, by pk."""
    successful = [
        (pk, charged, asked)
        for pk, status, charged, asked in zip(
            *(columns[_AT[field]] for field in ("pk", "status", "charged_amount", _ASKED)),
            strict=True,
        )
        if status == "successful"
    ]
    left = services.refundable_amounts(
        {pk: charged for pk, charged, asked in successful if asked}, using=alias
    )
    left.update((pk, charged or 0) for pk, charged, asked in successful if not asked)
    return left


class _Lines:
    """A file-like list of what csv.writer writes, a line an item."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.write = self.lines.append


def _csv(rows: Iterable[Sequence[Any]]) -> str:
    """``rows`` as CSV lines ending in ``\\n``. The csv module's line end is ``\\r\\n``, which
    makes it quote a cell with a ``\\r`` or a ``\\n`` in it (with ``\\n`` alone, a lone ``\\r``
    would go unquoted); each line's own ``\\r\\n`` then becomes ``\\n``."""
    out = _Lines()
    csv.writer(out).writerows(rows)
    return "".join([f"{line[:-2]}\n" for line in out.lines])


def _text(rows: list[Sequence[Any]], alias: str) -> str:
    """The lines of a chunk of rows, in :func:`header`'s order, made column by column."""
    columns: Columns = list(zip(*rows, strict=True))
    cells = [make(columns) for make in _MAKERS] + _refund_cells(columns, alias)
    return _csv(zip(*cells, strict=True))


def lines(queryset: QuerySet[Charge]) -> Iterator[bytes]:
    """The CSV text of ``queryset`` in UTF-8, a chunk of lines at a time, from a cursor.

    One transaction (on PostgreSQL in one snapshot where it begins here): what is
    left to refund, asked a chunk at a time, is of the same moment as the rows.
    """
    yield _csv([header()]).encode()
    alias = queryset.db
    connection = connections[alias]
    outer = connection.in_atomic_block
    with transaction.atomic(using=alias):
        if connection.vendor == "postgresql" and not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        selected = queryset.annotate(**{_ASKED: _asked()}).values_list(*_FIELDS)
        rows: Iterator[Sequence[Any]] = selected.iterator(chunk_size=CHUNK)
        while batch := list(itertools.islice(rows, CHUNK)):
            yield _text(batch, alias).encode()


def _asked() -> Q:
    """Whether a charge has a refund or a refund request: only those are asked what is left
    to refund (the others have all they were charged)."""
    refunds = Refund.objects.filter(charge=OuterRef("pk"))
    requests = ChargeActionRequest.objects.filter(charge=OuterRef("pk"), kind="refund")
    return Exists(refunds) | Exists(requests)


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
