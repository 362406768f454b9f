"""List filters whose choices cost no scan of the charges table.

Django's ``AllValuesFieldListFilter`` lists choices with ``SELECT DISTINCT``
over the whole table; these take theirs from settings and small tables, and
each filters on a column that leads an index.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib import admin
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import conf
from ..client.subscription_vocabulary import SUBSCRIPTION_PERIODS
from ..client.vocabulary import MODES
from ..models import Charge, RefundState, WebhookConfiguration
from ..models.subscriptions import PERIOD_LABELS
from ..services.attention import unknown_outcome
from ..signals import SIGNALS

#: At most this many stores are offered (a shop has a handful).
MAX_STORES = 20
#: The largest amount a (64-bit) amount column holds.
MAX_AMOUNT = 2**63 - 1


class _ValueFilter(admin.SimpleListFilter):
    """Exact match on one column; the selected value is kept among the choices."""

    field: str

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        choices = list(self.choices_from(request))
        selected = self.value()
        if selected and selected not in {value for value, _label in choices}:
            choices.append((selected, selected))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(**{self.field: value})


class AccountFilter(_ValueFilter):
    title = _("account")
    parameter_name = "account"
    field = "account"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(name, name) for name in conf.account_names()]


class SignalFilter(_ValueFilter):
    """The app's signals, from its list of them: no ``SELECT DISTINCT`` over every
    announcement (Django's filter of a plain column reads the whole table for its choices)."""

    title = _("signal")
    parameter_name = "signal"
    field = "signal"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(name, name) for name in SIGNALS]


class CurrencyFilter(_ValueFilter):
    title = _("currency")
    parameter_name = "currency"
    field = "requested_currency"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(c, c) for c in conf.get_setting("ADMIN_CURRENCIES")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.field: value.upper()}) if value else queryset


# The subscriptions' plain columns, each filtered under the parameter Django's own filter of
# the column used, with choices from the gateway's vocabulary instead of the table's values.


class SubscriptionCurrencyFilter(CurrencyFilter):
    parameter_name = "currency__exact"
    field = "currency"


class SubscriptionModeFilter(_ValueFilter):
    title = _("mode")
    parameter_name = "mode__exact"
    field = "mode"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(mode, mode) for mode in MODES]


class SubscriptionPeriodFilter(_ValueFilter):
    title = _("period")
    parameter_name = "period__exact"
    field = "period"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(period, PERIOD_LABELS[period]) for period in SUBSCRIPTION_PERIODS]


class StoreFilter(_ValueFilter):
    """Stores of the configured accounts and of the webhook configurations."""

    title = _("store")
    parameter_name = "store"
    field = "store_id"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        stores: dict[str, str] = {}
        for name in conf.account_names():
            _where, raw = conf.raw_account_settings(name)
            store = _as_uuid(raw.get("STORE_ID"))
            if store:
                stores.setdefault(str(store), name)
        configured = WebhookConfiguration.objects.exclude(store_id=None)
        pairs = configured.order_by().values_list("store_id", "account").distinct()[:MAX_STORES]
        for store_id, account in pairs:
            stores.setdefault(str(store_id), account)
        choices: list[tuple[str, Any]] = []
        for key, owner in list(stores.items())[:MAX_STORES]:
            # One indexed read per store (store_id, -created_on): its newest charge's name.
            store_name = (
                Charge.objects.filter(store_id=key)
                .order_by("-created_on")
                .values_list("store_name", flat=True)
                .first()
            )
            choices.append((key, f"{store_name or key[:8]} ({owner})"))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = _as_uuid(self.value())
        return queryset.filter(store_id=value) if value else queryset


class RefundStateFilter(admin.SimpleListFilter):
    """Refunded, partially refunded, or not refunded (by successful refunds).

    Each choice reads the charge's own ``refunds_total``; the refunded ones start
    from the small partial index of the charges that have one (``refunds_total > 0``,
    the index's condition as written there, so both databases' planners use it).
    """

    title = _("refunds")
    parameter_name = "refunds"
    NONE = "none"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [*RefundState.choices, (self.NONE, _("Not refunded"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        # The same rule as ``models.refund_state``, which the list's badge shows.
        value = self.value()
        if value == self.NONE:
            return queryset.filter(refunds_total__lte=0)
        if value not in RefundState.values:
            return queryset
        refunded = queryset.filter(refunds_total__gt=0)
        whole = Q(charged_amount__isnull=False, refunds_total__gte=F("charged_amount"))
        if value == RefundState.REFUNDED:
            return refunded.filter(whole)
        return refunded.exclude(whole)


def _as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value)) if value else None
    except ValueError:
        return None


class _RangeFilter(admin.ListFilter):
    """Two inputs, a lower and an upper bound, on one indexed column (a small GET form).

    A bound that cannot be read is not applied, and said so: ``problems`` holds
    what to tell staff (the changelist shows it; the export refuses to run).
    """

    template = "admin/django_paycharge/range_filter.html"
    lower_parameter: str
    upper_parameter: str
    input_type = "text"
    field: str
    lower_lookup = "gte"
    upper_lookup = "lte"
    #: What a bound looks like, for the message about one that is not.
    expected: Any = ""

    def __init__(
        self, request: HttpRequest, params: dict[str, Any], model: Any, model_admin: Any
    ) -> None:
        super().__init__(request, params, model, model_admin)
        self.problems: list[str] = []
        self.bounds: dict[str, Any] = {}
        for name in self.expected_parameters():
            if name in params:
                value = params.pop(name)
                # Django 5+ hands the filters lists of values: the last one wins, as in a form.
                value = value[-1] if isinstance(value, list) else value
                if value:
                    self.used_parameters[name] = value
        for name, upper in ((self.lower_parameter, False), (self.upper_parameter, True)):
            if text := self.raw(name):
                try:
                    self.bounds[name] = self.parse(text.strip(), upper=upper)
                except (ValueError, OverflowError):
                    self.problems.append(self.problem(text))

    def has_output(self) -> bool:
        return True

    def expected_parameters(self) -> list[str | None]:
        return [self.lower_parameter, self.upper_parameter]

    def raw(self, name: str) -> str:
        """The text given for one bound ("" when absent)."""
        return str(self.used_parameters.get(name) or "")

    def parse(self, text: str, *, upper: bool) -> Any:
        """The value to compare with, from the text of the lower or upper bound."""
        raise NotImplementedError

    def problem(self, text: str) -> str:
        return gettext(
            "“%(value)s” is not %(expected)s: the “%(filter)s” filter leaves it out."
        ) % {"value": text, "expected": self.expected, "filter": self.title}

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        lookups = {self.lower_parameter: self.lower_lookup, self.upper_parameter: self.upper_lookup}
        conditions = {f"{self.field}__{lookups[name]}": v for name, v in self.bounds.items()}
        return queryset.filter(**conditions)

    def choices(self, changelist: Any) -> Iterator[dict[str, Any]]:
        others = [
            (key, value)
            for key, values in changelist.get_filters_params().items()
            if key not in self.expected_parameters()
            for value in (values if isinstance(values, list) else [values])
        ]
        yield {
            "lower": (self.lower_parameter, self.raw(self.lower_parameter)),
            "upper": (self.upper_parameter, self.raw(self.upper_parameter)),
            "input_type": self.input_type,
            "others": others,
            "selected": bool(self.used_parameters),
            "problems": self.problems,
            "reset_query_string": changelist.get_query_string(
                remove=[*self.expected_parameters(), "p"]
            ),
        }


class CreatedRangeFilter(_RangeFilter):
    """Created from one day to another (both included, in the current time zone)."""

    title = _("created between")
    lower_parameter = "created_from"
    upper_parameter = "created_to"
    input_type = "date"
    field = "created_on"
    upper_lookup = "lt"  # before the day after the last one
    expected = _("a date (YYYY-MM-DD)")

    def parse(self, text: str, *, upper: bool) -> datetime:
        day = date.fromisoformat(text)
        return _start_of(day + timedelta(days=1) if upper else day)


class AmountRangeFilter(_RangeFilter):
    """Requested amount between two values in minor units (yen, cents), both included."""

    title = _("requested amount (minor units)")
    lower_parameter = "amount_min"
    upper_parameter = "amount_max"
    input_type = "number"
    field = "requested_amount"
    expected = _("a whole number of minor units (yen, cents)")

    def parse(self, text: str, *, upper: bool) -> int:
        value = int(text)
        if abs(value) > MAX_AMOUNT:  # what the column can hold
            raise ValueError(text)
        return value


def range_problems(filter_specs: Iterable[Any]) -> list[str]:
    """What the changelist's range filters could not read (empty when all is well)."""
    return [p for spec in filter_specs for p in getattr(spec, "problems", ())]


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


class OutcomeFilter(admin.SimpleListFilter):
    """Charge or action requests whose outcome is unknown, abandoned ones included: the rows
    the dashboard's "needs attention" counts (``services.attention.unknown_outcome``)."""

    title = _("outcome")
    parameter_name = "outcome"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("unknown", _("Unknown (money may have moved)"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "unknown":
            return queryset.filter(unknown_outcome(queryset.model))
        return queryset
