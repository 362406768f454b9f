"""A paginator that never counts more than a few thousand rows.

``COUNT(*)`` reads every row (or every index entry) that matches: on a table of
millions of charges that is the slowest query of the changelist, and it grows
with the table. So the count is either

- the planner's estimate (PostgreSQL): ``pg_class.reltuples`` for the whole
  table (none before the table was first analyzed), ``EXPLAIN``'s row
  estimate for a filtered one, when it is above
  ``PAYCHARGE["ADMIN_ESTIMATED_COUNT_THRESHOLD"]`` rows; or
- counted, up to that many rows and one more: exact when fewer match, and
  otherwise "more than the threshold" (``capped``). On SQLite, which has no
  estimate, this is every count; on PostgreSQL it covers an estimate that was
  too low.

Either way every page can be asked for: a page past the end is empty, never
an error, and a page takes the same statements whatever the statistics say:
one estimate, then a count only when the estimate is at or below the
threshold.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.core.paginator import Page, Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

from .. import conf

# Django's admin classes are generic only to type checkers (django-stubs);
# subscripting them at run time fails without django_stubs_ext.monkeypatch().
if TYPE_CHECKING:
    _PaginatorBase = Paginator[Any]
else:
    _PaginatorBase = Paginator


class EstimatedCountPaginator(_PaginatorBase):
    #: Whether the last ``count`` was an estimate (shown on the changelist).
    estimated = False
    #: Whether more rows match than were counted: ``count`` is ``threshold + 1``.
    capped = False

    @cached_property
    def threshold(self) -> int:
        """Counts above this are estimated or capped (``ADMIN_ESTIMATED_COUNT_THRESHOLD``)."""
        return int(conf.get_setting("ADMIN_ESTIMATED_COUNT_THRESHOLD"))

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return int(super().count)
        estimate = estimated_count(queryset)
        if estimate is not None and estimate > self.threshold:
            self.estimated = True
            return estimate
        counted = capped_count(queryset, self.threshold)
        self.capped = counted > self.threshold
        return counted

    def validate_number(self, number: Any) -> int:
        if not (self.estimated or self.capped):
            return int(super().validate_number(number))
        try:
            return max(1, int(number))  # past the estimate's end: an empty page, not an error
        except (TypeError, ValueError):
            return 1

    def page(self, number: Any) -> Page[Any]:
        if not (self.estimated or self.capped):
            return super().page(number)
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        return Page(self.object_list[bottom : bottom + self.per_page], number, self)


def capped_count(queryset: QuerySet[Any], limit: int) -> int:
    """How many rows ``queryset`` has, counting no further than ``limit + 1``.

    Only the ids are read: the list's joins and per-row subqueries (selected for
    display) would otherwise run for every row counted.
    """
    ids = queryset.order_by().select_related(None).values("pk")
    return int(ids[: limit + 1].count())


def estimated_count(queryset: QuerySet[Any]) -> int | None:
    """The planner's row estimate on PostgreSQL; None elsewhere or when it has none.

    One statement either way. A whole table that was never analyzed (or was
    empty when it last was) has no estimate: the caller's capped count reads
    at most the threshold's rows, and autovacuum analyzes a table long before
    that costs anything. (Asking ``EXPLAIN`` then would make the number of
    statements depend on when autovacuum last ran.)
    """
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    if queryset.query.is_empty():  # ``none()`` (a search that names nothing): no statement
        return 0
    if not queryset.query.where:
        table = queryset.model._meta.db_table
        with connection.cursor() as cursor:
            # -1 (PostgreSQL 14+) or 0 (older, or empty): never analyzed, or nothing in it.
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
            row = cursor.fetchone()
        if row and row[0] is not None and row[0] > 0:
            return int(row[0])
        return None
    plan = json.loads(queryset.order_by().explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])
