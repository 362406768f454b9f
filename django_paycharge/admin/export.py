"""CSV export of the charge changelist, as filtered, for reconciliation.

Streamed: rows are read in chunks from a database cursor and written out as
they come, so memory stays flat however many charges match (``bench/run
csv`` measures it at 100,000). On PostgreSQL the rows come by ``COPY ... TO
STDOUT``, which the server produces while Python writes the previous ones,
with the times, the decimal amounts and most refund cells already written by
the server (:mod:`._export_sql`, the same rules in SQL); Python writes the
texts, the metadata and the quoting. Elsewhere every cell is written here.
Amounts are exact: minor units, and the same amount as a decimal with the
currency's ISO-4217 decimals. Each charge says where its money is: its refund
state, the amount refunded (successful refunds) and, for a successful charge,
what is left to refund (``services.refundable_amount``, asked only for the
charges with refunds or refund requests: the others have their whole charged
amount left). No raw payload, no credential, no bank account number.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connections
from django.db.models import Exists, OuterRef, QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from .. import services
from ..models import (
    REFUNDED_ANNOTATION,
    Charge,
    ChargeActionRequest,
    Refund,
    RefundState,
    refund_state,
    with_refunded_amounts,
)
from ..money import to_major
from . import _export_sql

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
_ACTIVITY = "refund_activity"
CHUNK = 2000
# A spreadsheet runs a cell that starts with one of these as a formula ("CSV injection"):
# text from outside (metadata, merchant ids) gets a leading apostrophe instead.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_CHARS = frozenset(_FORMULA_START)


# json.dumps(value, ensure_ascii=False, sort_keys=True), without building an encoder a call.
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


class _Echo:
    """A file-like object that hands back what is written (csv.writer into a generator)."""

    def write(self, value: str) -> str:
        return value


def header() -> list[str]:
    names: list[str] = []
    for name, field in COLUMNS:
        names.append(name)
        if field in _AMOUNTS:
            names.append(name.replace("_amount", "_decimal"))
    return [*names, *REFUND_COLUMNS]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        value = _JSON(value)
    elif hasattr(value, "isoformat"):
        return str(value.isoformat())
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def row(values: dict[str, Any], left: int | None = None) -> list[str]:
    """One charge's cells, in :func:`header`'s order (``left``: left to refund, if known)."""
    cells: list[str] = []
    for _name, field in COLUMNS:
        value = values[field]
        if field in _AMOUNTS:
            cells.append("" if value is None else str(int(value)))
            currency = values[field.replace("_amount", "_currency")]
            cells.append("" if value is None else str(to_major(value, currency)))
        else:
            cells.append(_text(value))
    return cells + _refund_cells(values, left)


def _refund_cells(values: dict[str, Any], left: int | None) -> list[str]:
    """The cells of :data:`REFUND_COLUMNS` (amounts in the charged currency)."""
    refunded = int(values.get(REFUNDED_ANNOTATION) or 0)
    currency = values["charged_currency"] or values["requested_currency"]
    cells = [refund_state(values["charged_amount"], refunded)]
    cells += [str(refunded), str(to_major(refunded, currency))]
    cells += ["", ""] if left is None else [str(left), str(to_major(left, currency))]
    return cells


def lines(queryset: QuerySet[Charge]) -> Iterator[str]:
    """The CSV text of ``queryset``, a chunk of lines at a time, read from a cursor."""
    writer = csv.writer(_Echo())
    yield str(writer.writerow(header()))
    queryset = _with_refunds(queryset)
    if connections[queryset.db].vendor == "postgresql":
        yield from _copied_lines(queryset, writer)
        return
    fields = [field for _name, field in COLUMNS]
    fields += ["pk", REFUNDED_ANNOTATION, _ACTIVITY]
    rows: Iterator[dict[str, Any]] = queryset.values(*fields).iterator(chunk_size=CHUNK)
    while batch := list(itertools.islice(rows, CHUNK)):
        left = _left_to_refund(batch)
        yield "".join(str(writer.writerow(row(v, left.get(v["pk"])))) for v in batch)


# The metadata, last of COLUMNS, and the refund cells follow what the SQL sends.
_HEAD_COLUMNS = COLUMNS[:-1]
assert COLUMNS[-1][1] == "metadata"
#: What Python needs to write a line's refund cells itself (where the SQL leaves them).
_REST = (
    ("pk", "int8"),
    ("status", "text"),
    ("charged_amount", "int8"),
    ("charged_currency", "text"),
    ("requested_currency", "text"),
    (REFUNDED_ANNOTATION, "int8"),
    (_ACTIVITY, "bool"),
)
_STATES = (RefundState.REFUNDED.value, RefundState.PARTIALLY_REFUNDED.value)


def _copied_lines(queryset: QuerySet[Charge], writer: Any) -> Iterator[str]:
    """PostgreSQL: rows sent by COPY, with the times, decimals and most refund cells written
    by the server (``_export_sql``); the texts, metadata and quoting written here."""
    cells = _export_sql.cells_sql(_HEAD_COLUMNS, _AMOUNTS)
    # The cells that take _text here: texts from outside (never a formula).
    texts = [n for n, (_sql, _type, field) in enumerate(cells) if field and _takes_text(field)]
    selected = _export_sql.selected
    columns = [
        *((sql, kind) for sql, kind, _field in cells),
        (_export_sql.refund_sql(_STATES, REFUNDED_ANNOTATION, _ACTIVITY), "text"),
        (selected("metadata"), "text"),
        *((selected(name), kind) for name, kind in _REST),
    ]
    fields = [field for _name, field in COLUMNS] + [name for name, _type in _REST]
    rows = _export_sql.copy_rows(queryset, columns, fields)
    size, names = len(cells), [name for name, _type in _REST]
    decode = json.JSONDecoder().decode  # what the metadata's JSONField decodes with
    while batch := list(itertools.islice(rows, CHUNK)):
        busy = [dict(zip(names, r[size + 2 :], strict=True)) for r in batch if r[size] is None]
        left = _left_to_refund(busy)
        by_pk = {values["pk"]: values for values in busy}
        out = []
        for row_ in batch:
            line = list(row_[:size])
            for n in texts:  # _text of a text, inline: the loop's costliest step otherwise
                value = line[n]
                if value and value[0] in _FORMULA_CHARS:
                    line[n] = "'" + value
            meta = row_[size + 1]
            line.append(_text(None if meta is None else decode(meta)))
            tail = row_[size]
            if tail is None:
                pk = row_[size + 2]
                tail = writer.writerow(_refund_cells(by_pk[pk], left.get(pk)))[:-2]
            out.append(f"{writer.writerow(line)[:-2]},{tail}\r\n")
        yield "".join(out)


def _takes_text(field: str) -> bool:
    return Charge._meta.get_field(field).get_internal_type() in ("CharField", "TextField")


def _with_refunds(queryset: QuerySet[Charge]) -> QuerySet[Charge]:
    """``queryset`` with each charge's refunded total and whether it has refund activity."""
    if REFUNDED_ANNOTATION not in queryset.query.annotations:
        queryset = with_refunded_amounts(queryset)
    refunds = Refund.objects.filter(charge=OuterRef("pk"))
    requests = ChargeActionRequest.objects.filter(
        charge=OuterRef("pk"), kind=ChargeActionRequest.Kind.REFUND
    )
    return queryset.annotate(**{_ACTIVITY: Exists(refunds) | Exists(requests)})


def _left_to_refund(batch: Iterable[dict[str, Any]]) -> dict[int, int]:
    """What is left to refund of each successful charge of ``batch``, by pk."""
    successful = [v for v in batch if v["status"] == "successful"]
    busy = [v["pk"] for v in successful if v[_ACTIVITY]]
    charges = Charge.objects.in_bulk(busy) if busy else {}
    left = {pk: services.refundable_amount(charge) for pk, charge in charges.items()}
    for values in successful:
        if not values[_ACTIVITY]:
            left[values["pk"]] = int(values["charged_amount"] or 0)  # nothing refunded or asked
    return left


def csv_response(queryset: QuerySet[Charge]) -> StreamingHttpResponse:
    """A download of ``queryset`` as CSV (UTF-8 with a BOM, so spreadsheets read Japanese)."""

    def body() -> Iterator[str]:
        yield "\ufeff"
        yield from lines(queryset)

    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = StreamingHttpResponse(body(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="charges-{stamp}.csv"'
    response["Cache-Control"] = "no-store"
    return response
