"""CSV export of the charge changelist, as filtered, for reconciliation.

One path on every database: rows are read in chunks from a database cursor
(the compiled ``values_list`` query, as the driver gives them: :class:`_Reading`
applies no converter of Django's a row; PostgreSQL's ids and times are read as
text) and written out here as they come, so memory stays flat however many
charges match (``bench/run csv`` measures it).
A chunk is made a column at a time (one comprehension a column, no function
call a cell where the csv module's own text of a value is the cell) and written
by one ``writerows``. Lines end with ``\n``. Amounts are exact: minor units, and
the same amount as a decimal with the currency's ISO-4217 decimals. A text from
outside never starts a formula (:func:`neutral`, the one spelling of that rule).
Each charge says where its money is: its refund state, the amount refunded (its
stored ``refunds_total``, as in every list) and, for a successful charge, what is
left to refund (``services.left_to_refund`` of what the row read of its refunds,
``services.refund_annotations``; what refund requests of unknown outcome reserve
asked of those charges only, one query a chunk at most, never one a row). No raw
payload, no credential, no bank account number.
"""

from __future__ import annotations

import csv
import functools
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connections, transaction
from django.db.models import Case, JSONField, QuerySet, When
from django.http import StreamingHttpResponse
from django.utils import timezone

from .. import services
from ..models import Charge, refund_state
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


_COUNTED, _RESERVING = "export_refunds_counted", "export_reserving_pk"
#: What each row is read as: :data:`COLUMNS`' fields, then these (the last two from
#: ``services.refund_annotations``: the sum of the refunds that count, and the charge's pk
#: where a refund request of unknown outcome reserves some of what is left, else None).
#: Nineteen in all: CPython 3.11 parks every row tuple of twenty in a free list it never
#: takes one from (up to 2,000 of them), which a memory test sees as growth.
_FIELDS = (*(field for _name, field in COLUMNS), "refunds_total", _COUNTED, _RESERVING)
_AT = {field: at for at, field in enumerate(_FIELDS)}

#: A chunk of rows read column by column (``zip(*rows)``), in :data:`_FIELDS`' order: as
#: the database driver gave them, except columns Django would convert and no cell reads raw.
Columns = Sequence[Sequence[Any]]
#: How one column of cells is made from a chunk's columns.
Maker = Callable[[Columns], Sequence[Any]]
#: Django's converters of a column, as ``SQLCompiler.get_converters`` gives them.
Converters = Sequence[Callable[..., Any]]


def _uuid_text(hex_text: str) -> str:
    """``str(uuid.UUID(hex_text))`` of the 32 hex digits Django stores where a database has
    no UUID type, without making the UUID."""
    if len(hex_text) != 32:
        return str(uuid.UUID(hex_text))
    h = hex_text.lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_loads = json.JSONDecoder().decode  # json.loads(text) with the default decoder, less a call


def _json_text(text: str) -> str:
    """:func:`_json` of the value ``JSONField.from_db_value`` reads from ``text`` (its
    default decoder: the text itself when it is not JSON)."""
    try:
        value = _loads(text)
    except json.JSONDecodeError:
        value = text
    return _json(value)


def _utc_text(value: Any, convert: Callable[[Any], Any]) -> Any:
    """The ISO text of a datetime the driver read naive and Django would make aware in UTC
    (``convert``: Django's converter, for anything else)."""
    if type(value) is datetime and value.tzinfo is None:
        return f"{value.isoformat()}+00:00"
    return value and convert(value).isoformat()


def _raw_maker(
    field: str, converters: Converters, connection: Any, texts: frozenset[str]
) -> Maker | None:
    """How the cells of ``field`` are made from the column as the driver read it, where
    Django's ``converters`` of it are known to make a value only for its text to be taken,
    or the driver read its text (``texts``: kinds of field, :func:`_read_as_text`): the
    same text, made from what was read (None: no such way; the column is converted)."""
    at = _AT[field]
    model_field = Charge._meta.get_field(field)
    kind = model_field.get_internal_type()
    known, ops = list(converters), connection.ops
    if kind in texts and not known:
        if kind == "DateTimeField":  # the database's ISO text, offset and all
            return lambda columns: [value and _from_iso(value).isoformat() for value in columns[at]]
        return lambda columns: columns[at]  # a UUID's text
    if kind == "UUIDField" and known == [ops.convert_uuidfield_value]:  # 32 hex digits
        return lambda columns: [value and _uuid_text(value) for value in columns[at]]
    if (
        isinstance(model_field, JSONField)
        and not model_field.decoder
        and known == [model_field.from_db_value]
    ):
        return lambda columns: ["" if text is None else _json_text(text) for text in columns[at]]
    if kind == "DateTimeField" and known == [ops.convert_datetimefield_value] and _utc(connection):
        convert = functools.partial(known[0], expression=None, connection=connection)
        return lambda columns: [_utc_text(value, convert) for value in columns[at]]
    return None


def _maker(field: str) -> Maker:
    """How the cells of ``field`` are made, by its kind, from its values as Django reads
    them. The csv module writes None as an empty cell and a whole number or a UUID as its
    text (hex digits and hyphens): those columns go out as they are read."""
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


_from_iso = datetime.fromisoformat


def _read_as_text(cursor: Any, connection: Any) -> frozenset[str]:
    """The kinds of field ``cursor`` is made to read as their text, for :func:`_raw_maker`:
    through psycopg 3 (PostgreSQL) UUIDs, whose text is ``str(uuid)``, and, where Django
    reads times in UTC, times (Django's loader of them costs more than the cell)."""
    adapters = getattr(cursor.cursor, "adapters", None)
    if connection.vendor != "postgresql" or adapters is None:
        return frozenset()
    from psycopg.types.string import TextLoader

    adapters.register_loader("uuid", TextLoader)
    if not _utc(connection):
        return frozenset({"UUIDField"})
    adapters.register_loader("timestamptz", TextLoader)
    return frozenset({"UUIDField", "DateTimeField"})


def _utc(connection: Any) -> bool:
    """Whether Django makes the naive datetimes this connection reads aware in UTC."""
    return bool(settings.USE_TZ) and connection.timezone_name == "UTC"


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


class _Reading:
    """How the rows of a compiled query are read: how each cell of :data:`COLUMNS` is made
    (amounts: two; :func:`_raw_maker` where it can, else :func:`_maker`), and Django's
    converters of the other columns (``compiler.get_converters``), applied a column at a
    time."""

    def __init__(self, compiler: Any, texts: frozenset[str]) -> None:
        fields = [selected[0] for selected in compiler.select[: compiler.col_count]]
        self.connection = connection = compiler.connection
        self.convert = dict(compiler.get_converters(fields))
        self.makers: list[Maker] = []
        for _name, field in COLUMNS:
            found = self.convert.get(_AT[field], ((), None))[0]
            raw = _raw_maker(field, found, connection, texts)
            if raw:
                self.convert.pop(_AT[field], None)
            self.makers.append(raw or _maker(field))
            if field in _AMOUNTS:
                self.makers.append(_decimal_maker(field))

    def columns(self, rows: list[Sequence[Any]]) -> Columns:
        """A chunk's rows as columns, as Django reads them but for the raw ones (above)."""
        columns: list[Sequence[Any]] = list(zip(*rows, strict=True))
        for at, (converters, expression) in self.convert.items():
            values = columns[at]
            for convert in converters:
                values = [convert(value, expression, self.connection) for value in values]
            columns[at] = values
        return columns


def _refund_cells(columns: Columns, alias: str) -> list[Sequence[Any]]:
    """:data:`REFUND_COLUMNS`' columns of a chunk: refunded amounts in the charged currency
    (the requested one when none was charged); what is left to refund of the successful
    charges (:func:`_left`)."""
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
    left = _left(columns, alias)
    return [states, refunded, _decimals(refunded, currencies), left, _decimals(left, currencies)]


def _left(columns: Columns, alias: str) -> list[int | None]:
    """What is left to refund of a chunk's successful charges (None for the others): the
    service's word, from what the rows read of their refunds; only the charges with a
    refund request of unknown outcome are asked what those reserve, one query a chunk."""
    fields = ("status", "charged_amount", _COUNTED, _RESERVING)
    rows = list(zip(*(columns[_AT[field]] for field in fields), strict=True))
    reserving = [pk for status, _charged, _counted, pk in rows if pk and status == "successful"]
    reserved = services.reserved_amounts(reserving, using=alias) if reserving else {}
    left = services.left_to_refund
    return [
        left(charged, counted, reserved.get(pk, 0)) if status == "successful" else None
        for status, charged, counted, pk in rows
    ]


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


def _text(rows: list[Sequence[Any]], reading: _Reading, alias: str) -> str:
    """The lines of a chunk of rows, in :func:`header`'s order, made column by column."""
    columns = reading.columns(rows)
    cells = [make(columns) for make in reading.makers] + _refund_cells(columns, alias)
    return _csv(zip(*cells, strict=True))


def lines(queryset: QuerySet[Charge]) -> Iterator[bytes]:
    """The CSV text of ``queryset`` in UTF-8, a chunk of lines at a time, from a cursor.

    One transaction (on PostgreSQL in one snapshot where it begins here): what is
    left to refund, read with the rows, is of the same moment as they are. The rows are
    read as ``values_list(...).iterator()`` reads them, without its converters a row
    (:class:`_Reading`).
    """
    yield _csv([header()]).encode()
    alias = queryset.db
    connection = connections[alias]
    outer = connection.in_atomic_block
    with transaction.atomic(using=alias):
        if connection.vendor == "postgresql" and not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        counted, unsettled = services.refund_annotations()
        reserving = Case(When(unsettled, then="pk"))
        selected = queryset.annotate(**{_COUNTED: counted, _RESERVING: reserving})
        compiler = selected.values_list(*_FIELDS).query.get_compiler(using=alias)
        try:
            sql, params = compiler.as_sql()  # what values_list(...).iterator() runs
        except EmptyResultSet:
            return
        # As QuerySet.iterator(): a server-side cursor unless the settings disable them.
        server_side = not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
        with connection.chunked_cursor() if server_side else connection.cursor() as cursor:
            reading = _Reading(compiler, _read_as_text(cursor, connection))
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(CHUNK):
                yield _text(rows, reading, alias).encode()


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
