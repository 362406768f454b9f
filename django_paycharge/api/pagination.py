"""Cursor pages over the local mirror, with the gateway's parameters and rules.

``limit`` (10 to 100, default 10), ``cursor`` (a charge id; the page starts
after it) and ``cursor_direction`` (``desc``, newest first, by default; or
``asc``), checked by the client's own validators.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from ..client._params import list_params
from ..exceptions import FieldError, InvalidParametersError
from ..models import Charge

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
        anchor = (
            Charge.objects.filter(gateway_id=params["cursor"]).values("created_on", "id").first()
        )
        if anchor is None:
            raise InvalidParametersError(errors=[FieldError("cursor", _("no charge has this id"))])
        when, pk = anchor["created_on"], anchor["id"]
        if ascending:
            queryset = queryset.filter(Q(created_on__gt=when) | Q(created_on=when, id__gt=pk))
        else:
            queryset = queryset.filter(Q(created_on__lt=when) | Q(created_on=when, id__lt=pk))
    rows = list(queryset[: limit + 1])
    return rows[:limit], len(rows) > limit
