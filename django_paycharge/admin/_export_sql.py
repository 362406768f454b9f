"""The CSV export's first cells written by PostgreSQL, and the COPY that sends its rows.

``export.row`` says what each cell is; this says the same in SQL, for the
cells up to the metadata (ids, texts, the creation time, amounts and their
decimal form), each already quoted for CSV, joined into one text per row:

- a text from outside starts with an apostrophe when a spreadsheet would run it
  as a formula (``export._FORMULA_START``: the same characters);
- a cell with a comma, a double quote or a line break is quoted as
  Python's ``csv`` module quotes it (``QUOTE_MINIMAL``); NULL is an empty cell;
- a time is ``datetime.isoformat()`` in the connection's time zone
  (microseconds only when there are some);
- an amount's decimal form has its currency's ISO-4217 decimals
  (``money.CURRENCY_EXPONENTS``, written into the SQL; 2 otherwise).

``tests/admin/test_export_sql.py`` holds the two ways to the same text, cell
by cell, on awkward values.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from django.db import connections
from django.db.models import QuerySet, TextField
from django.db.models.expressions import RawSQL

from ..models import Charge
from ..money import CURRENCY_EXPONENTS, DEFAULT_EXPONENT

#: The annotation holding a row's server-written cells, joined by commas.
HEAD = "csv_head"

# What makes Python's csv module quote a cell, as a regular expression (the line breaks
# written with chr(), so that no character of the SQL needs escaping).
_QUOTED = "('[\",' || chr(13) || chr(10) || ']')"


def _text(expr: str, formula_start: Sequence[str]) -> str:
    """``export._text`` of a text column: neutralised, quoted, NULL as empty."""
    starts = ", ".join(f"chr({ord(c)})" for c in formula_start)
    return _quoted(f"CASE WHEN left({expr}, 1) IN ({starts}) THEN '''' || {expr} ELSE {expr} END")


def _quoted(expr: str) -> str:
    return (
        f"COALESCE(CASE WHEN {expr} ~ {_QUOTED} THEN '\"' || replace({expr}, '\"', '\"\"') "
        f"|| '\"' ELSE {expr} END, '')"
    )


def _time(expr: str) -> str:
    micro = f"CASE WHEN mod(date_part('microseconds', {expr})::bigint, 1000000) <> 0 "
    micro += f"THEN to_char({expr}, '.US') ELSE '' END"
    return (
        f"COALESCE(to_char({expr}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || {micro} "
        f"|| to_char({expr}, 'TZH:TZM'), '')"
    )


def _exponent(currency: str) -> str:
    """``money.currency_exponent`` of a currency column (its codes: three ASCII letters)."""
    assert all(re.fullmatch("[A-Z]{3}", code) for code in CURRENCY_EXPONENTS)
    cases = " ".join(f"WHEN '{code}' THEN {e}" for code, e in CURRENCY_EXPONENTS.items())
    return f"(CASE upper(COALESCE({currency}, '')) {cases} ELSE {DEFAULT_EXPONENT} END)"


def _decimal(amount: str, currency: str) -> str:
    """``str(money.to_major(amount, currency))``, or empty for NULL."""
    exponent = _exponent(currency)
    return f"COALESCE(round({amount}::numeric / (10::numeric ^ {exponent}), {exponent})::text, '')"


def head_sql(
    columns: Sequence[tuple[str, str]], amounts: Collection[str], formula_start: Sequence[str]
) -> str:
    """The SQL of a row's cells of ``columns`` (``export.COLUMNS``), joined by commas.

    Only model metadata and the constants above are written into it: no parameter.
    """
    table = f'"{Charge._meta.db_table}"'
    cells = []

    def column(name: str) -> str:
        return f'{table}."{Charge._meta.get_field(name).column}"'

    for _header, name in columns:
        kind = Charge._meta.get_field(name).get_internal_type()
        if name in amounts:
            currency = column(name.replace("_amount", "_currency"))
            cells.append(f"COALESCE({column(name)}::text, '')")
            cells.append(_decimal(column(name), currency))
        elif kind == "UUIDField":
            cells.append(f"COALESCE({column(name)}::text, '')")
        elif kind == "DateTimeField":
            cells.append(_time(column(name)))
        elif kind == "JSONField":
            raise ValueError(f"{name}: JSON cells are written by Python (export._text)")
        else:
            cells.append(_text(column(name), formula_start))
    return "concat_ws(',', " + ", ".join(cells) + ")"


def copy_rows(
    queryset: QuerySet[Charge],
    columns: Sequence[tuple[str, str]],
    amounts: Collection[str],
    formula_start: Sequence[str],
    names: Sequence[str],
    types: Sequence[str],
) -> Iterator[dict[str, Any]]:
    """``names`` of each row of ``queryset`` (:data:`HEAD` among them), sent by COPY and read
    as ``types`` (PostgreSQL's type names).

    The server produces rows while the caller writes the previous ones; psycopg
    reads them as they come, so memory stays flat.
    """
    sql = head_sql(columns, amounts, formula_start)
    head = RawSQL(sql, [], output_field=TextField())  # noqa: S611 - no value in it (head_sql)
    query = queryset.annotate(**{HEAD: head}).values_list(*names).query
    statement, values = query.get_compiler(using=queryset.db).as_sql()
    with (
        connections[queryset.db].cursor() as cursor,
        cursor.copy(f"COPY ({statement}) TO STDOUT", values) as copy,
    ):
        copy.set_types(types)
        for row in copy.rows():
            yield dict(zip(names, row, strict=True))
