"""A query's SQL compiled once per database connection, run again with other values.

For the few reads of the path someone waits on with every capture and refund
(the charge under its lock, the request holding a key, what is left to refund):
there the ORM building and compiling a queryset costs several times the
database's work (``bench/run client``, docs/benchmarks.md). The queryset stays
the one spelling of the query: it is built once with stand-ins for the values
that change, compiled by Django for the connection's database, and its SQL
and its parameters are kept; each run puts the values in the stand-ins' places
and applies the converters the ORM would (JSON, dates on SQLite, sums).

Kept per connection, not per alias: a compiler and its converters belong to the
connection that made them (one per thread), and go with it.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet

#: A value the query is run with: an id, a key, or a list of ids (an ``IN``).
Value = int | str | Sequence[int]

_stand_ins = itertools.count(1)


class Compiled:
    """``build(*values)``'s SQL, compiled once a connection and run with other values.

    ``build`` returns a ``values_list`` queryset; every value it is given must
    reach the SQL as a parameter of its own, unchanged (a plain ``field=value``
    or ``field__in=values`` lookup): compiling refuses otherwise. A list's
    length is part of what is compiled (callers keep the lengths few).
    """

    def __init__(self, build: Callable[..., QuerySet[Any, Any]]) -> None:
        self._build = build
        self._plans: weakref.WeakKeyDictionary[BaseDatabaseWrapper, dict[Any, _Plan]] = (
            weakref.WeakKeyDictionary()
        )

    def rows(self, using: str, *values: Value) -> list[tuple[Any, ...]]:
        """The rows of the query for ``values`` on the database ``using``, converted."""
        connection = connections[using]
        shape = tuple(len(v) if isinstance(v, list | tuple) else -1 for v in values)
        plans = self._plans.get(connection)
        if plans is None:
            plans = self._plans[connection] = {}
        plan = plans.get(shape)
        if plan is None:
            plan = plans[shape] = _Plan(self._build, using, shape, values)
        return plan.run(connection, values)


class _Plan:
    __slots__ = ("compiler", "converters", "params", "slots", "sql")

    def __init__(
        self,
        build: Callable[..., QuerySet[Any, Any]],
        using: str,
        shape: tuple[int, ...],
        values: Sequence[Value],
    ) -> None:
        stand_ins: list[Any] = []
        places: dict[Any, tuple[int, int]] = {}  # stand-in -> (value, item of a list or -1)
        for n, (length, value) in enumerate(zip(shape, values, strict=True)):
            if length < 0:
                stand_in = _stand_in(value)
                places[stand_in] = (n, -1)
                stand_ins.append(stand_in)
            else:
                assert isinstance(value, list | tuple)
                items = [_stand_in(value[0] if length else 0) for _ in range(length)]
                places.update({item: (n, i) for i, item in enumerate(items)})
                stand_ins.append(items)
        queryset = build(*stand_ins).using(using)
        compiler = queryset.query.get_compiler(using)
        sql, params = compiler.as_sql()
        slots: list[tuple[int, int, int]] = []  # (parameter, value, item)
        for p, param in enumerate(params):
            if _hashable(param) and param in places:
                slots.append((p, *places.pop(param)))
        if places:
            raise ValueError(f"values not passed to the SQL unchanged: {sorted(places.values())}")
        self.sql = sql
        self.params = list(params)
        self.slots = slots
        self.compiler = compiler
        self.converters = compiler.get_converters(
            [column[0] for column in compiler.select[: compiler.col_count]]
        )

    def run(
        self, connection: BaseDatabaseWrapper, values: Sequence[Value]
    ) -> list[tuple[Any, ...]]:
        params = self.params.copy()
        for p, n, item in self.slots:
            value = values[n]
            params[p] = value if item < 0 else value[item]  # type: ignore[index]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows: list[Any] = cursor.fetchall()
        if self.converters:
            return [tuple(row) for row in self.compiler.apply_converters(rows, self.converters)]
        return [tuple(row) for row in rows]


def _stand_in(like: Any) -> Any:
    """A value of ``like``'s type that no query holds by chance."""
    n = next(_stand_ins)
    if isinstance(like, str):
        return f"\x00paycharge-stand-in-{n}"
    return -(2**62) - n


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
