"""A query's SQL compiled once per database connection, run again with other values.

For the few reads someone waits on with every call (a capture's and a refund's:
the charge under its lock, the request holding a key, what is left to refund;
the webhook receiver's look for a waiting drain task): there the ORM building
and compiling a queryset costs more than the database's work (``bench/run
client``, docs/benchmarks.md). The queryset stays
the one spelling of the query: it is built once with stand-ins for the values
that change, compiled by Django for the connection's database, and its SQL
and its parameters are kept; each run puts the values in the stand-ins' places
and applies the converters the ORM would (JSON, dates on SQLite, sums).

Kept per connection, not per alias: a compiler and its converters belong to the
connection that made them (one per thread), and go with it (they are kept on
the connection object itself).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet

#: A value the query is run with: an id, a key, a UUID, or a list of them (an ``IN``).
Value = int | str | uuid.UUID | Sequence[int | str | uuid.UUID]

_stand_ins = itertools.count(1)
#: The attribute of a connection that holds its plans.
_PLANS = "_paycharge_compiled"


class Compiled:
    """``build(*values)``'s SQL, compiled once a connection and run with other values.

    ``build`` returns a ``values_list`` queryset; every value it is given must
    reach the SQL as a parameter of its own, unchanged (a plain ``field=value``
    or ``field__in=values`` lookup; a UUID as itself or as its hex digits, as
    Django sends it): compiling refuses otherwise. A list's
    length is part of what is compiled (callers keep the lengths few).
    """

    def __init__(self, build: Callable[..., QuerySet[Any, Any]]) -> None:
        self._build = build

    def rows(self, using: str, *values: Value) -> list[tuple[Any, ...]]:
        """The rows of the query for ``values`` on the database ``using``, converted."""
        connection = connections[using]
        return self._plan(connection, using, values).run(connection, values)

    def statement(self, using: str, *values: Value) -> tuple[str, list[Any]]:
        """The query's SQL and parameters for ``values`` (for a statement that holds it)."""
        connection = connections[using]
        plan = self._plan(connection, using, values)
        return plan.sql, plan.params_for(values)

    def _plan(self, connection: BaseDatabaseWrapper, using: str, values: Sequence[Value]) -> _Plan:
        shape = tuple(len(v) if isinstance(v, list | tuple) else -1 for v in values)
        # Kept on the connection itself: a plan holds its connection (the compiler, the
        # converters), so a table of connections here would keep every one alive, and
        # open, after its thread ended.
        plans: dict[Any, _Plan] = connection.__dict__.setdefault(_PLANS, {})
        plan = plans.get((self, shape))
        if plan is None:
            plan = plans[self, shape] = _Plan(self._build, using, shape, values)
        return plan


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
        # stand-in's parameter -> (value, item of a list or -1, the form it takes there)
        places: dict[Any, tuple[int, int, str]] = {}
        for n, (length, value) in enumerate(zip(shape, values, strict=True)):
            if length < 0:
                stand_in = _stand_in(value)
                places.update(_forms(stand_in, n, -1))
                stand_ins.append(stand_in)
            else:
                assert isinstance(value, list | tuple)
                items = [_stand_in(value[0] if length else 0) for _ in range(length)]
                for i, item in enumerate(items):
                    places.update(_forms(item, n, i))
                stand_ins.append(items)
        wanted = {(n, i) for n, i, _form in places.values()}
        queryset = build(*stand_ins).using(using)
        compiler = queryset.query.get_compiler(using)
        sql, params = compiler.as_sql()
        slots: list[tuple[int, int, int, str]] = []  # (parameter, value, item, form)
        for p, param in enumerate(params):
            if _hashable(param) and param in places:
                n, i, form = places[param]
                slots.append((p, n, i, form))
                wanted.discard((n, i))
        if wanted:
            raise ValueError(f"values not passed to the SQL unchanged: {sorted(wanted)}")
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
        params = self.params_for(values)
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows: list[Any] = cursor.fetchall()
        if self.converters:
            return [tuple(row) for row in self.compiler.apply_converters(rows, self.converters)]
        return [tuple(row) for row in rows]

    def params_for(self, values: Sequence[Value]) -> list[Any]:
        params = self.params.copy()
        for p, n, item, form in self.slots:
            value = values[n]
            value = value if item < 0 else value[item]  # type: ignore[index]
            if form == _UUID:
                value = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
            elif form == _HEX:
                value = (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).hex
            params[p] = value
        return params


def _stand_in(like: Any) -> Any:
    """A value of ``like``'s type that no query holds by chance."""
    n = next(_stand_ins)
    if isinstance(like, uuid.UUID):
        return uuid.UUID(int=(0x5A17D1 << 96) + n)
    if isinstance(like, str):
        return f"\x00paycharge-stand-in-{n}"
    return -(2**62) - n


_SAME, _UUID, _HEX = "same", "uuid", "hex"


def _forms(stand_in: Any, n: int, item: int) -> dict[Any, tuple[int, int, str]]:
    """Where ``stand_in`` may appear among the parameters, and in which form: a UUID is
    sent as it is where the database has a UUID type, as its hex digits elsewhere."""
    if isinstance(stand_in, uuid.UUID):
        return {stand_in: (n, item, _UUID), stand_in.hex: (n, item, _HEX)}
    return {stand_in: (n, item, _SAME)}


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
