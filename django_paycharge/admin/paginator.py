"""A paginator that does not count a large table on PostgreSQL.

``COUNT(*)`` reads every row (or every index entry) that matches: on a table of
millions of charges that is the slowest query of the changelist. Above
``PAYCHARGE["ADMIN_ESTIMATED_COUNT_THRESHOLD"]`` rows the planner's estimate is
used instead: ``pg_class.reltuples`` for the whole table, ``EXPLAIN``'s row
estimate for a filtered one. Below it, and on other databases, the count is exact.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.core.paginator import Paginator
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

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return int(super().count)
        threshold = int(conf.get_setting("ADMIN_ESTIMATED_COUNT_THRESHOLD"))
        estimate = estimated_count(queryset)
        if estimate is not None and estimate > threshold:
            self.estimated = True
            return estimate
        return int(queryset.count())


def estimated_count(queryset: QuerySet[Any]) -> int | None:
    """The planner's row estimate on PostgreSQL; None elsewhere or when it has none."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    if not queryset.query.where:
        table = queryset.model._meta.db_table
        with connection.cursor() as cursor:
            # -1 (PostgreSQL 14+) or 0 (older): never vacuumed or analyzed; ask EXPLAIN.
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
            row = cursor.fetchone()
        if row and row[0] is not None and row[0] > 0:
            return int(row[0])
    plan = json.loads(queryset.order_by().explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])
