"""The CSV export's rows as PostgreSQL sends them, by COPY, with some cells written in SQL.

``export.row`` says what each cell is. Python writes the texts from outside
(``export._text``: a formula never starts a cell), the metadata and the
quoting; PostgreSQL sends the other cells as text, and writes three kinds
itself, the same as ``export.row``:

- a time, ``datetime.isoformat()`` in the connection's time zone (microseconds
  only when there are some);
- an amount's decimal form, with its currency's ISO-4217 decimals
  (``money.CURRENCY_EXPONENTS``, written into the SQL; 2 otherwise);
- the refund cells, joined by commas (numbers and fixed words: nothing to
  quote), but for a successful charge with refunds or refund requests (NULL:
  Python writes them, ``services.refundable_amount``).

Where each cell is written is a matter of cost: an expression a cell costs the
server about a microsecond a row, a text's check costs Python a tenth of that;
the server and Python work side by side, so the split keeps both about as busy
(``docs/benchmarks.md``, "Admin CSV export").
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

_WORD = re.compile("[a-z_]+")


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


def _time(expr: str) -> str:
    """``value.isoformat()`` of a time, in the connection's time zone, or NULL."""
    # One to_char: ".000000" is what isoformat() leaves out (no other dot in the text).
    return f"replace(to_char({expr}, 'YYYY-MM-DD\"T\"HH24:MI:SS.USTZH:TZM'), '.000000', '')"


def _one(exponent: int) -> str:
    return "1" if exponent == 0 else f"0.{'0' * (exponent - 1)}1"


def _decimal(amount: str, currency: str) -> str:
    """``str(money.to_major(amount, currency))``, or NULL."""
    return f"({amount}::numeric * {_unit(currency)})::text"


def cells_sql(
    columns: Sequence[tuple[str, str]], amounts: Collection[str]
) -> list[tuple[str, str, str | None]]:
    """(SQL, PostgreSQL type, field) of each cell of ``columns`` (``export.COLUMNS`` but the
    metadata), over the subquery ``selected``: a field as it is, or (field None) a cell
    written in SQL: a time, an amount's decimal form."""
    cells: list[tuple[str, str, str | None]] = []
    for _header, name in columns:
        kind = Charge._meta.get_field(name).get_internal_type()
        if kind == "JSONField":
            raise ValueError(f"{name}: JSON is written by Python")
        if kind == "DateTimeField":
            cells.append((_time(selected(name)), "text", None))
            continue
        cells.append((selected(name), "text", name))
        if name in amounts:
            currency = selected(name.replace("_amount", "_currency"))
            cells.append((_decimal(selected(name), currency), "text", None))
    return cells


def refund_sql(refund_states: tuple[str, str], refunded: str, activity: str) -> str:
    """The refund cells of ``export.REFUND_COLUMNS`` joined by commas, or NULL where
    Python writes them (a successful charge with refund activity)."""
    assert all(_WORD.fullmatch(state) for state in refund_states)
    whole, part = refund_states
    charged, total = selected("charged_amount"), selected(refunded)
    currency = f"COALESCE(NULLIF({selected('charged_currency')}, ''), "
    currency += f"{selected('requested_currency')})"
    state = (
        f"CASE WHEN {total} <= 0 THEN '' WHEN {charged} IS NOT NULL AND {total} >= {charged} "
        f"THEN '{whole}' ELSE '{part}' END"
    )
    left = f"COALESCE({charged}, 0)"
    successful = f"{selected('status')} = 'successful'"
    return (
        f"CASE WHEN {successful} AND {selected(activity)} THEN NULL ELSE "
        f"{state} || ',' || {total}::text || ',' || {_decimal(total, currency)} || ',' || "
        f"CASE WHEN {successful} THEN {left}::text || ',' || {_decimal(left, currency)} "
        "ELSE ',' END END"
    )


def copy_rows(
    queryset: QuerySet[Charge], columns: Sequence[tuple[str, str]], fields: Sequence[str]
) -> Iterator[tuple[Any, ...]]:  # the columns: (SQL, PostgreSQL type)
    """Each row of ``queryset`` as ``columns`` (SQL and type) say, sent by COPY;
    ``fields``: the fields and annotations the SQL reads.

    The cells are written over the rows the query selected and ordered (a subquery):
    computed before the sort, their text would be sorted with the rows, on disk past
    ``work_mem``. The server produces rows while the caller writes the previous ones;
    psycopg reads them as they come, so memory stays flat.
    """
    inner = queryset.values_list(*dict.fromkeys(fields)).query
    statement, params = inner.get_compiler(using=queryset.db).as_sql()
    select = ", ".join(sql for sql, _type in columns)
    select = f"SELECT {select} FROM ({statement}) selected"  # noqa: S608 - names, no value
    with (
        connections[queryset.db].cursor() as cursor,
        cursor.copy(f"COPY ({select}) TO STDOUT", params) as copy,
    ):
        copy.set_types([kind for _sql, kind in columns])
        yield from copy.rows()


def selected(name: str) -> str:
    """A field's or an annotation's column in the subquery ``selected``: Django's
    ``values_list`` names each after what it was asked for."""
    assert '"' not in name
    return f'selected."{name}"'
