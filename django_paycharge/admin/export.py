"""CSV export of the charge changelist, as filtered, for reconciliation.

Streamed: rows are read in chunks from a database cursor and written out as
they come, so memory stays flat however many charges match (``bench/run
csv`` measures it at 100,000). On PostgreSQL the server writes the whole file,
by ``COPY ... (FORMAT csv)``, with the same cells in SQL (:mod:`._export_sql`),
and Python passes its bytes on; elsewhere every cell is written here. Lines
end with ``\n``. Amounts are exact: minor units, and the same amount as a
decimal with the currency's ISO-4217 decimals. Each charge says where its money
is: its refund state, the amount refunded (successful refunds) and, for a
successful charge, what is left to refund (``services.refundable_amount``,
asked only for the charges with refunds or refund requests: the others have
their whole charged amount left). No raw payload, no credential, no bank
account number.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connections
from django.db.models import Exists, F, OuterRef, QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from .. import services
from ..models import (
    Charge,
    ChargeActionRequest,
    Refund,
    RefundState,
    refund_state,
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
_REFUNDED = "export_refunded"
_ACTIVITY = "refund_activity"
CHUNK = 2000
# A spreadsheet runs a cell that starts with one of these as a formula ("CSV injection"):
# text from outside (metadata, merchant ids) gets a leading apostrophe instead.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# json.dumps(value, ensure_ascii=False, sort_keys=True), without building an encoder a call.
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


class _Echo:
    """A file-like object that hands back what is written (csv.writer into a generator)."""

    def write(self, value: str) -> str:
        return value


# The csv module's line end is \r\n, which makes it quote a cell with a \r or a \n in it
# (as COPY does); the lines end with \n, as COPY's do.
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


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list | bool):  # JSON's true, not Python's True
        value = _JSON(value)
    elif hasattr(value, "isoformat"):
        return str(value.isoformat())
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


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
    refunded = int(values.get(_REFUNDED) or 0)
    currency = values["charged_currency"] or values["requested_currency"]
    cells = [refund_state(values["charged_amount"], refunded)]
    cells += [str(refunded), str(to_major(refunded, currency))]
    cells += ["", ""] if left is None else [str(left), str(to_major(left, currency))]
    return cells


def lines(queryset: QuerySet[Charge]) -> Iterator[bytes]:
    """The CSV text of ``queryset`` in UTF-8, a chunk of lines at a time, from a cursor."""
    yield _line(header()).encode()
    queryset = _with_refunds(queryset)
    if connections[queryset.db].vendor == "postgresql":
        yield from _copied_lines(queryset)
        return
    fields = [field for _name, field in COLUMNS]
    fields += ["pk", _REFUNDED, _ACTIVITY]
    rows: Iterator[dict[str, Any]] = queryset.values(*fields).iterator(chunk_size=CHUNK)
    while batch := list(itertools.islice(rows, CHUNK)):
        left = _left_to_refund(batch, queryset.db)
        yield "".join(_line(row(v, left.get(v["pk"]))) for v in batch).encode()


_STATES = (RefundState.REFUNDED.value, RefundState.PARTIALLY_REFUNDED.value)


def _copied_lines(queryset: QuerySet[Charge]) -> Iterator[bytes]:
    """PostgreSQL: every line written by the server (``_export_sql``)."""
    cells = _export_sql.cells_sql(COLUMNS, _AMOUNTS, FORMULA_START)

    def sql(asked: bool) -> list[str]:
        return cells + _export_sql.refund_sql(_STATES, _REFUNDED, _ACTIVITY, asked)

    fields = [field for _name, field in COLUMNS]
    fields += ["pk", "status", "charged_amount", "charged_currency", "requested_currency"]
    fields += [_REFUNDED, _ACTIVITY]
    yield from _export_sql.copy_csv(queryset, sql, fields, _asked_left(queryset), CHUNK)


def _asked_left(queryset: QuerySet[Charge]) -> Iterator[list[tuple[int, int]]]:
    """What is left to refund of the successful charges of ``queryset`` with refund
    activity, in batches of (pk, amount)."""
    busy = queryset.filter(status="successful", **{_ACTIVITY: True}).order_by()
    pks = busy.values_list("pk", flat=True).iterator(chunk_size=CHUNK)
    while batch := list(itertools.islice(pks, CHUNK)):
        yield list(_refundable(batch, queryset.db).items())


def _with_refunds(queryset: QuerySet[Charge]) -> QuerySet[Charge]:
    """``queryset`` with each charge's refunded total (its stored ``refunds_total``, as in
    every list) and whether it has refund activity."""
    refunds = Refund.objects.filter(charge=OuterRef("pk"))
    requests = ChargeActionRequest.objects.filter(
        charge=OuterRef("pk"), kind=ChargeActionRequest.Kind.REFUND
    )
    return queryset.annotate(
        **{_REFUNDED: F("refunds_total"), _ACTIVITY: Exists(refunds) | Exists(requests)}
    )


def _refundable(pks: list[int], using: str) -> dict[int, int]:
    """What is left to refund of the charges ``pks`` (``services.refundable_amount``)."""
    charges = Charge.objects.using(using).in_bulk(pks) if pks else {}
    return {pk: services.refundable_amount(charge) for pk, charge in charges.items()}


def _left_to_refund(batch: Iterable[dict[str, Any]], using: str) -> dict[int, int]:
    """What is left to refund of each successful charge of ``batch``, by pk."""
    successful = [v for v in batch if v["status"] == "successful"]
    left = _refundable([v["pk"] for v in successful if v[_ACTIVITY]], using)
    for values in successful:
        if not values[_ACTIVITY]:
            left[values["pk"]] = int(values["charged_amount"] or 0)  # nothing refunded or asked
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
