"""Cursor pages over the local mirror, with the gateway's parameters and rules.

``limit`` (10 to 100, default 10), ``cursor`` (a charge id; the page starts
after it) and ``cursor_direction`` (``desc``, newest first, by default; or
``asc``), checked by the client's own validators.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model, Q, QuerySet
from django.utils.translation import gettext as _

from ..client.params import list_params
from ..exceptions import FieldError, InvalidParametersError
from ..models import Charge

M = TypeVar("M", bound=Model)

DEFAULT_LIMIT = 10
_INTEGER = re.compile(r"-?[0-9]{1,9}")


def _as_int(value: str | None) -> Any:
    # Query values are text; the client's rule wants an int, so convert only clean integers
    # and leave anything else for the rule to refuse (naming the field).
    if value is not None and _INTEGER.fullmatch(value):
        return int(value)
    return value


def charge_page(queryset: QuerySet[Charge], query: Mapping[str, str]) -> tuple[list[Charge], bool]:
    """One page of ``queryset`` and whether more follow; InvalidParametersError on bad input."""
    return page(queryset, query, _("no charge has this id"))


def page(queryset: QuerySet[M], query: Mapping[str, str], missing: str) -> tuple[list[M], bool]:
    """One page of ``queryset`` (any mirror model with ``gateway_id`` and ``created_on``);
    ``missing`` is the cursor's error when no row has its id."""
    params = list_params(
        limit=_as_int(query.get("limit")),
        cursor=query.get("cursor"),
        cursor_direction=query.get("cursor_direction"),
        filters={},
    )
    limit = int(params.get("limit", DEFAULT_LIMIT))
    ascending = params.get("cursor_direction", "desc") == "asc"
    order = ("created_on", "id") if ascending else ("-created_on", "-id")
    queryset = queryset.order_by(*order)
    if "cursor" in params:
        found = queryset.model._default_manager.filter(gateway_id=params["cursor"])
        anchor = found.values("created_on", "id").first()
        if anchor is None:
            raise InvalidParametersError(errors=[FieldError("cursor", missing)])
        queryset = queryset.filter(_after(anchor["created_on"], anchor["id"], ascending))
    rows = list(queryset[: limit + 1])
    return rows[:limit], len(rows) > limit


def _after(when: Any, pk: int, ascending: bool) -> Q:
    """The rows after (``when``, ``pk``) in the list's order, NULL creation times included.

    A charge the gateway sent without a creation time has NULL there; the
    database sorts NULLs as largest (PostgreSQL) or smallest (SQLite), and
    the keyset follows the same order, so such charges are neither skipped
    nor repeated, and one can be a cursor.
    """
    nulls_first = ascending != connection.features.nulls_order_largest
    if when is None:
        same = (
            Q(created_on__isnull=True, id__gt=pk)
            if ascending
            else Q(created_on__isnull=True, id__lt=pk)
        )
        return same | Q(created_on__isnull=False) if nulls_first else same
    if ascending:
        later = Q(created_on__gt=when) | Q(created_on=when, id__gt=pk)
    else:
        later = Q(created_on__lt=when) | Q(created_on=when, id__lt=pk)
    return later if nulls_first else later | Q(created_on__isnull=True)
