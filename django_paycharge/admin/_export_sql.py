"""The CSV export on PostgreSQL: the server writes every line, by ``COPY ... (FORMAT csv)``.

``export.row`` says what each cell is; here is the same in SQL, over the rows the
changelist selected and ordered (the subquery ``selected``), so that Python only passes
COPY's bytes on:

- a text from outside: an apostrophe before a formula's first character
  (``export._text``), NULL for an empty text (COPY would write ``""``, ``csv`` an empty
  cell);
- a time: ``datetime.isoformat()`` in the connection's time zone (microseconds only
  when there are some);
- an amount's decimal form, with its currency's ISO-4217 decimals
  (``money.CURRENCY_EXPONENTS``, written into the SQL; 2 otherwise);
- the metadata: PostgreSQL's own JSON text of it (``jsonb``: the same value, its keys in
  PostgreSQL's order), neutralised like a text;
- the refund cells, but what is left to refund of a successful charge with refunds or
  refund requests: that is ``services.refundable_amount``, asked before the COPY (a
  connection runs nothing else while it copies) and read from a temporary table.

Both lines end with ``\\n`` and quote the same characters (the delimiter, the quote,
``\\r`` and ``\\n``). ``tests/admin/test_export_sql.py`` holds the two ways to the same
cells on awkward values.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

from django.db import connections, transaction
from django.db.models import QuerySet

from ..models import Charge
from ..money import CURRENCY_EXPONENTS, DEFAULT_EXPONENT

_WORD = re.compile("[a-z_]+")
# What is left to refund of the charges that need Python's word on it; gone at commit
# (its name is written out in the INSERT too).
_LEFT = "paycharge_export_left"
_JSON_STARTS = frozenset("{[")


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


def _time(expr: str) -> str:
    """``value.isoformat()`` of a time, in the connection's time zone, or NULL."""
    # One to_char: ".000000" is what isoformat() leaves out (no other dot in the text).
    return f"replace(to_char({expr}, 'YYYY-MM-DD\"T\"HH24:MI:SS.USTZH:TZM'), '.000000', '')"


def _decimal(amount: str, currency: str) -> str:
    """``str(money.to_major(amount, currency))``, or NULL."""
    return f"({amount}::numeric * {_unit(currency)})::text"


def _neutral(expr: str, formula_start: Collection[str]) -> str:
    """``expr``, a text, with an apostrophe before a formula's first character; NULL for an
    empty text (COPY writes ``""`` for it, ``csv`` nothing)."""
    assert all(len(c) == 1 and ord(c) < 128 for c in formula_start)
    codes = ", ".join(str(ord(c)) for c in sorted(formula_start))
    return f"CASE WHEN ascii({expr}) IN ({codes}) THEN '''' || {expr} ELSE NULLIF({expr}, '') END"


def _json(expr: str, formula_start: Collection[str]) -> str:
    """``export._text`` of a JSON value (jsonb): an object or an array as PostgreSQL's JSON
    text of it (its keys in PostgreSQL's order), a string as its text, null as nothing,
    a number or a boolean as JSON; neutralised."""
    assert not _JSON_STARTS & set(formula_start)  # an object's or an array's first character
    text, string = f"{expr}::text", f"({expr} #>> '{{}}')"
    return (
        f"CASE jsonb_typeof({expr}) WHEN 'object' THEN {text} WHEN 'array' THEN {text} "
        f"WHEN 'string' THEN {_neutral(string, formula_start)} WHEN 'null' THEN NULL "
        f"ELSE {_neutral(text, formula_start)} END"
    )


def cells_sql(
    columns: Sequence[tuple[str, str]], amounts: Collection[str], formula_start: Collection[str]
) -> list[str]:
    """The SQL of each cell of ``columns`` (``export.COLUMNS``) over the subquery
    ``selected``: a UUID or a number as it is, a text neutralised, a time, an amount and
    its decimal form, the metadata's JSON."""
    cells: list[str] = []
    for _header, name in columns:
        kind = Charge._meta.get_field(name).get_internal_type()
        column = selected(name)
        if kind in ("CharField", "TextField"):
            cells.append(_neutral(column, formula_start))
        elif kind == "DateTimeField":
            cells.append(_time(column))
        elif kind == "JSONField":
            cells.append(_json(column, formula_start))
        elif kind in ("UUIDField", "BigIntegerField"):
            cells.append(column)
        else:
            raise ValueError(f"{name}: no SQL for a {kind} cell")
        if name in amounts:
            cells.append(_decimal(column, selected(name.replace("_amount", "_currency"))))
    return cells


def refund_sql(
    refund_states: tuple[str, str], refunded: str, activity: str, asked: bool
) -> list[str]:
    """The cells of ``export.REFUND_COLUMNS``; ``asked``: what is left to refund of the
    successful charges with refund activity is in the temporary table (else NULL)."""
    assert all(_WORD.fullmatch(state) for state in refund_states)
    whole, part = refund_states
    charged, total = selected("charged_amount"), selected(refunded)
    currency = f"COALESCE(NULLIF({selected('charged_currency')}, ''), "
    currency += f"{selected('requested_currency')})"
    state = (
        f"CASE WHEN {total} <= 0 THEN NULL WHEN {charged} IS NOT NULL AND {total} >= {charged} "
        f"THEN '{whole}' ELSE '{part}' END"
    )
    told = "NULL"
    if asked:  # names only, no value
        told = f"(SELECT amount FROM {_LEFT} WHERE charge_id = {selected('pk')})"  # noqa: S608
    left = (
        f"CASE WHEN {selected('status')} = 'successful' THEN CASE WHEN {selected(activity)} "
        f"THEN {told} ELSE COALESCE({charged}, 0) END END"
    )
    return [state, f"{total}::text", _decimal(total, currency), left, _decimal(left, currency)]


def copy_csv(
    queryset: QuerySet[Charge],
    cells: Callable[[bool], Sequence[str]],
    fields: Sequence[str],
    left: Iterable[list[tuple[int, int]]],
    chunk: int,
) -> Iterator[bytes]:
    """The CSV lines of ``queryset``, ``chunk`` rows at a time, as COPY writes them.

    ``cells(asked)``: the SQL of each cell over ``selected`` (which has ``fields``),
    ``asked`` when the temporary table holds what is left to refund; ``left``: that, in
    batches of (pk, amount), for the charges whose cell reads it.

    One transaction, in one snapshot where it begins here: what is asked first and what
    is copied then are of the same moment. The cells are written over the rows the query
    selected and ordered (a subquery): computed before the sort, their text would be
    sorted with the rows, on disk past ``work_mem``. JIT is off: compiling this
    statement's expressions takes longer than running them. The server produces rows
    while the caller writes the previous ones; memory stays flat.
    """
    alias = queryset.db
    connection = connections[alias]
    outer = connection.in_atomic_block
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        if not outer:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SET LOCAL jit = off")
        asked = False
        for batch in left:
            if not asked:
                cursor.execute(
                    f"CREATE TEMPORARY TABLE {_LEFT} "
                    "(charge_id bigint PRIMARY KEY, amount bigint NOT NULL) ON COMMIT DROP"
                )
                asked = True
            cursor.execute(
                "INSERT INTO paycharge_export_left "
                "SELECT * FROM unnest(%s::bigint[], %s::bigint[])",
                [[pk for pk, _amount in batch], [amount for _pk, amount in batch]],
            )
        inner = queryset.values_list(*dict.fromkeys(fields)).query
        statement, params = inner.get_compiler(using=alias).as_sql()
        select = ", ".join(cells(asked))
        select = f"SELECT {select} FROM ({statement}) selected"  # noqa: S608 - names, no value
        with cursor.copy(f"COPY ({select}) TO STDOUT (FORMAT csv)", params) as copy:
            rows = iter(copy)
            while lines := list(itertools.islice(rows, chunk)):
                yield b"".join(lines)
        if asked:
            cursor.execute(f"DROP TABLE {_LEFT}")


def selected(name: str) -> str:
    """A field's or an annotation's column in the subquery ``selected``: Django's
    ``values_list`` names each after what it was asked for."""
    assert '"' not in name
    return f'selected."{name}"'
