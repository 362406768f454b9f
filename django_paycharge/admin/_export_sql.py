"""The CSV export's lines written by PostgreSQL, and the COPY that sends them.

``export.row`` says what each cell is; this says the same in SQL, each cell
already quoted for CSV, joined into the line's text:

- a text from outside starts with an apostrophe when a spreadsheet would run it
  as a formula (``export._FORMULA_START``: the same characters);
- a cell with a comma, a double quote or a line break is quoted as
  Python's ``csv`` module quotes it (``QUOTE_MINIMAL``); NULL is an empty cell;
- a time is ``datetime.isoformat()`` in the connection's time zone
  (microseconds only when there are some);
- an amount's decimal form has its currency's ISO-4217 decimals
  (``money.CURRENCY_EXPONENTS``, written into the SQL; 2 otherwise);
- the refund cells, but for a successful charge with refunds or refund requests
  (left to Python: ``services.refundable_amount``).

The metadata cell between them is Python's (``json.dumps``): PostgreSQL's JSON
text orders keys otherwise, and writing it in SQL cost the server more than it
saved Python.

``tests/admin/test_export_sql.py`` holds the two ways to the same text on awkward values.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from django.db import connections
from django.db.models import QuerySet

from ..models import Charge
from ..money import CURRENCY_EXPONENTS, DEFAULT_EXPONENT

# What makes Python's csv module quote a cell, as a regular expression (the line breaks
# written with chr(), so that no character of the SQL needs escaping).
_QUOTED = "('[\",' || chr(13) || chr(10) || ']')"
_WORD = re.compile("[a-z_]+")


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
    # One to_char: ".000000" is what isoformat() leaves out (no other dot in the text).
    text = f"to_char({expr}, 'YYYY-MM-DD\"T\"HH24:MI:SS.USTZH:TZM')"
    return f"COALESCE(replace({text}, '.000000', ''), '')"


def _unit(currency: str) -> str:
    """One minor unit of ``currency`` as a numeric whose scale is ISO-4217's decimals:
    multiplied by it, an amount in minor units reads as ``str(money.to_major(...))``."""
    assert all(re.fullmatch("[A-Z]{3}", code) for code in CURRENCY_EXPONENTS)
    by_exponent: dict[int, list[str]] = {}
    for code, exponent in CURRENCY_EXPONENTS.items():
        by_exponent.setdefault(exponent, []).append(f"'{code}'")
    code = f"upper(COALESCE({currency}, ''))"
    cases = " ".join(
        f"WHEN {code} IN ({', '.join(codes)}) THEN {_one(exponent)}"
        for exponent, codes in by_exponent.items()
    )
    return f"(CASE {cases} ELSE {_one(DEFAULT_EXPONENT)} END)"


def _one(exponent: int) -> str:
    return "1" if exponent == 0 else f"0.{'0' * (exponent - 1)}1"


def _decimal(amount: str, currency: str) -> str:
    """``str(money.to_major(amount, currency))``, or empty for NULL."""
    return f"COALESCE(({amount}::numeric * {_unit(currency)})::text, '')"


def line_sql(
    columns: Sequence[tuple[str, str]],
    amounts: Collection[str],
    formula_start: Sequence[str],
    refund_states: tuple[str, str],
    refunded: str,
    activity: str,
) -> tuple[str, str]:
    """The SQL of a line's cells of ``columns`` (``export.COLUMNS`` but the metadata), and
    of its refund cells (NULL where Python writes them); over the subquery ``selected``,
    whose columns Django names after the fields and annotations.

    Only model metadata and the constants above are written into them: no parameter.
    """
    cells = []
    for _header, name in columns:
        kind = Charge._meta.get_field(name).get_internal_type()
        if name in amounts:
            cells.append(f"COALESCE({_selected(name)}::text, '')")
            cells.append(_decimal(_selected(name), _selected(name.replace("_amount", "_currency"))))
        elif kind == "UUIDField":
            cells.append(f"COALESCE({_selected(name)}::text, '')")
        elif kind == "DateTimeField":
            cells.append(_time(_selected(name)))
        elif kind == "JSONField":
            raise ValueError(f"{name}: the metadata is the tail's")
        else:
            cells.append(_text(_selected(name), formula_start))
    head = "concat_ws(',', " + ", ".join(cells) + ")"
    assert all(_WORD.fullmatch(state) for state in refund_states)
    whole, part = refund_states
    charged, total = _selected("charged_amount"), _selected(refunded)
    currency = f"COALESCE(NULLIF({_selected('charged_currency')}, ''), "
    currency += f"{_selected('requested_currency')})"
    state = (
        f"CASE WHEN {total} <= 0 THEN '' WHEN {charged} IS NOT NULL AND {total} >= {charged} "
        f"THEN '{whole}' ELSE '{part}' END"
    )
    left = f"COALESCE({charged}, 0)"
    successful = f"{_selected('status')} = 'successful'"
    tail = (
        f"CASE WHEN {successful} AND {_selected(activity)} THEN NULL ELSE "
        f"{state} || ',' || {total}::text || ',' || {_decimal(total, currency)} || ',' || "
        f"CASE WHEN {successful} THEN {left}::text || ',' || {_decimal(left, currency)} "
        "ELSE ',' END END"
    )
    return head, tail


def copy_rows(
    queryset: QuerySet[Charge],
    sql: tuple[str, str],
    fields: Sequence[str],
    rest: Sequence[tuple[str, str]],
) -> Iterator[tuple[Any, ...]]:
    """Each row of ``queryset`` as (its ``line_sql`` texts, its metadata's JSON text, then
    each field of ``rest``, NULL unless Python writes the refund cells), sent by COPY.
    ``fields``: those the SQL reads; ``rest``: a field or annotation and PostgreSQL's type.

    The line is written over the rows the query selected and ordered (a subquery):
    computed before the sort, its text would be sorted with the rows, on disk past
    ``work_mem``. The server produces rows while the caller writes the previous ones;
    psycopg reads them as they come, so memory stays flat.
    """
    names = dict.fromkeys([*fields, "metadata", *(name for name, _type in rest)])
    inner = queryset.values_list(*names).query
    statement, params = inner.get_compiler(using=queryset.db).as_sql()
    head, tail = sql
    needed = ", ".join(f'CASE WHEN tail IS NULL THEN lines."{n}" END' for n, _type in rest)
    # OFFSET 0 keeps the lines a subquery of their own: pulled up, ``tail`` would be
    # written again for each reference to it.
    select = (
        f"SELECT head, tail, metadata, {needed} FROM (SELECT {head} AS head, {tail} AS tail, "  # noqa: S608
        f"selected.* FROM ({statement}) selected OFFSET 0) lines"
    )
    with (
        connections[queryset.db].cursor() as cursor,
        cursor.copy(f"COPY ({select}) TO STDOUT", params) as copy,
    ):
        copy.set_types(["text", "text", "text", *(kind for _name, kind in rest)])
        yield from copy.rows()


def _selected(name: str) -> str:
    """A field's or an annotation's column in the subquery ``selected``: Django's
    ``values_list`` names each after what it was asked for."""
    assert '"' not in name
    return f'selected."{name}"'
