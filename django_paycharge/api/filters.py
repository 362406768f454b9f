"""Filters of the charge list (django-filter): what staff and front ends ask the mirror.

``status`` (repeatable), ``mode``, ``currency``, ``payment_type``,
``created_after`` / ``created_before`` (ISO-8601, ``[after, before)``),
``amount_min`` / ``amount_max`` (minor units, inclusive, on the requested
amount) and ``metadata`` (``key:value``, repeatable: every pair must match).
Bad values answer 400 naming the parameter, like the cursor parameters.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import django_filters
from django.db.models import Q, QuerySet
from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from ..exceptions import FieldError, InvalidParametersError
from ..models import Charge
from ..models.charges import ChargeMode, ChargeStatus

_METADATA = re.compile(r"(?P<key>[A-Za-z0-9_\-]{1,100}):(?P<value>.{0,500})", re.DOTALL)
_INTEGER = re.compile(r"-?[0-9]{1,18}")


class _InstantFilter(django_filters.IsoDateTimeFilter):
    """An ISO-8601 time compared as its instant: PostgreSQL refuses UTC offsets of 16 hours
    and more, which ISO-8601 text (and Python) allow."""

    def filter(self, qs: Any, value: Any) -> Any:
        if isinstance(value, datetime) and value.tzinfo is not None:
            value = value.astimezone(UTC)
        return super().filter(qs, value)


class ChargeFilter(django_filters.FilterSet):
    """The charge list's query parameters (see the module docstring)."""

    status = django_filters.MultipleChoiceFilter(choices=ChargeStatus.choices)
    mode = django_filters.ChoiceFilter(choices=ChargeMode.choices)
    currency = django_filters.CharFilter(method="filter_currency", max_length=3)
    payment_type = django_filters.CharFilter(field_name="payment_type", max_length=32)
    created_after = _InstantFilter(field_name="created_on", lookup_expr="gte")
    created_before = _InstantFilter(field_name="created_on", lookup_expr="lt")
    amount_min = django_filters.NumberFilter(field_name="requested_amount", lookup_expr="gte")
    amount_max = django_filters.NumberFilter(field_name="requested_amount", lookup_expr="lte")

    class Meta:
        model = Charge
        fields: list[str] = []

    def filter_currency(self, queryset: QuerySet[Charge], name: str, value: str) -> Any:
        return queryset.filter(requested_currency=value.upper())


def metadata_condition(pairs: list[str]) -> Q:
    """``["order:A-1", ...]`` -> a condition every pair must meet; InvalidParametersError if odd.

    A value of digits also matches the number (metadata keep the gateway's JSON types).
    """
    condition = Q()
    for pair in pairs:
        match = _METADATA.fullmatch(pair)
        if match is None:
            reason = _("expected key:value (key: letters, digits, _ and -)")
            raise InvalidParametersError(errors=[FieldError("metadata", reason)])
        lookup, value = f"metadata__{match['key']}", match["value"]
        one = Q(**{lookup: value})
        if _INTEGER.fullmatch(value):
            one |= Q(**{lookup: int(value)})
        condition &= one
    return condition


def filter_charges(queryset: QuerySet[Charge], query: QueryDict) -> QuerySet[Charge]:
    """``queryset`` narrowed by the request's filters; InvalidParametersError on bad values."""
    # An empty parameter (a form's blank select) means no filter, as for the single-value ones.
    query = query.copy()
    for key in list(query):
        query.setlist(key, [value for value in query.getlist(key) if value != ""])
    filterset = ChargeFilter(query, queryset=queryset)
    if not filterset.is_valid():
        raise InvalidParametersError(
            errors=[
                FieldError(field, str(message))
                for field, messages in filterset.errors.items()
                for message in messages
            ]
        )
    filtered: QuerySet[Charge] = filterset.qs
    pairs = query.getlist("metadata")
    return filtered.filter(metadata_condition(pairs)) if pairs else filtered


def _parameter(name: str, kind: Any, description: Any, **extra: Any) -> OpenApiParameter:
    return OpenApiParameter(name, kind, description=description, **extra)


#: The filters as OpenAPI query parameters (the list view's schema).
FILTER_PARAMETERS = [
    _parameter(
        "status",
        str,
        gettext_lazy("Only these statuses (repeat the parameter for several)."),
        enum=ChargeStatus.values,
        many=True,
        explode=True,
    ),
    _parameter("mode", str, gettext_lazy("Only this mode."), enum=ChargeMode.values),
    _parameter("currency", str, gettext_lazy("Only this requested currency (ISO-4217 code).")),
    _parameter("payment_type", str, gettext_lazy("Only this payment type (card, konbini, ...).")),
    _parameter(
        "created_after",
        OpenApiTypes.DATETIME,
        gettext_lazy("Only charges created at or after this ISO-8601 time."),
    ),
    _parameter(
        "created_before",
        OpenApiTypes.DATETIME,
        gettext_lazy("Only charges created before this ISO-8601 time."),
    ),
    _parameter(
        "amount_min",
        int,
        gettext_lazy("Only requested amounts of at least this many minor units."),
    ),
    _parameter(
        "amount_max",
        int,
        gettext_lazy("Only requested amounts of at most this many minor units."),
    ),
    _parameter(
        "metadata",
        str,
        gettext_lazy("key:value; only charges whose metadata has it (repeat: all must match)."),
        many=True,
        explode=True,
    ),
]
