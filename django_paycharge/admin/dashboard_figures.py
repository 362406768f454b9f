"""The dashboard's figures: a few aggregate queries over indexed columns, summed up in Python.

Days are the shop's days: a charge counts on the date its creation time has
in the current time zone (``TIME_ZONE``, or the one activated for the
request), and "today" starts at that zone's midnight. Takings are successful
charges (the charged amount, else the requested one) by creation time;
refunds are successful refunds by their own creation time; failures are
charges that ended ``failed`` or ``error``. Money is never added across
currencies, and live and test charges are never mixed. Subscriptions: the active ones
(``current`` or ``unpaid``: charged on their schedule), and this month's payments
(successful charges of a subscription, the first payment included) and failures, by
creation time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from django.db.models import Case, Count, F, IntegerField, Q, Sum, Value, When
from django.db.models.expressions import Expression
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import Charge, ChargeStatus, PaymentType, Refund, Subscription, SubscriptionStatus
from ..services.attention import AttentionItem, needs_attention

#: The periods of the tables, in days ending today (today included).
PERIODS = (1, 7, 30)
DAYS = max(PERIODS)
FAILED = (ChargeStatus.FAILED, ChargeStatus.ERROR)
OPEN_TYPES = (PaymentType.BANK_TRANSFER, PaymentType.KONBINI)
ACTIVE_SUBSCRIPTIONS = (SubscriptionStatus.CURRENT, SubscriptionStatus.UNPAID)
#: Open bank transfers and konbini payments listed (the count covers them all).
OPEN_LISTED = 20


@dataclass
class Totals:
    """Amount (minor units) and number of charges in each period of :data:`PERIODS`."""

    amounts: list[int] = field(default_factory=lambda: [0] * len(PERIODS))
    counts: list[int] = field(default_factory=lambda: [0] * len(PERIODS))

    def add(self, age: int, count: int, amount: int) -> None:
        for i, days in enumerate(PERIODS):
            if age < days:
                self.counts[i] += count
                self.amounts[i] += amount


@dataclass
class SubscriptionCounts:
    active: int = 0
    renewals: int = 0
    failures: int = 0


@dataclass
class Figures:
    today: date
    days: list[date]
    #: ``{(currency, payment type): Totals}``, and per currency over every payment type.
    takings: dict[tuple[str, str], Totals]
    refunds: dict[tuple[str, str], Totals]
    currency_takings: dict[str, Totals]
    currency_refunds: dict[str, Totals]
    #: ``{(status, code): Totals}`` (counts only); code "" when the charge gave none.
    failures: dict[tuple[str, str], Totals]
    #: Per day (oldest first): ``{currency: amount}`` taken and the number of failures.
    daily_takings: list[dict[str, int]]
    daily_failures: list[int]
    open_charges: list[Charge]
    open_count: int
    attention: list[AttentionItem]
    #: Active subscriptions, and this month's payments and failures of subscriptions.
    subscriptions: SubscriptionCounts = field(default_factory=lambda: SubscriptionCounts())

    @property
    def currencies(self) -> list[str]:
        """Currencies taken in the last 30 days, the most charges first."""
        return by_count(self.currency_takings)


def by_count(totals: dict[str, Totals]) -> list[str]:
    """The keys of ``totals``, the most charges in 30 days first."""
    return sorted(totals, key=lambda key: (-totals[key].counts[-1], key))


def compute(mode: str, tz: tzinfo, now: datetime | None = None) -> Figures:
    """Every figure of the dashboard for ``mode`` (live or test) in time zone ``tz``."""
    now = now or timezone.now()
    today = timezone.localtime(now, tz).date()
    first = today - timedelta(days=DAYS - 1)
    # Each day's local midnight, tomorrow's included: a day of 23 or 25 hours stays one day.
    days = [first + timedelta(days=n) for n in range(DAYS)]
    starts = [
        timezone.make_aware(datetime.combine(d, time.min), tz)
        for d in [*days, today + timedelta(days=1)]
    ]
    figures = Figures(
        today=today,
        days=days,
        takings=defaultdict(Totals),
        refunds=defaultdict(Totals),
        currency_takings=defaultdict(Totals),
        currency_refunds=defaultdict(Totals),
        failures=defaultdict(Totals),
        daily_takings=[defaultdict(int) for _ in days],
        daily_failures=[0] * DAYS,
        open_charges=[],
        open_count=0,
        attention=[],
    )
    _charges(figures, mode, starts)
    _refunds(figures, mode, starts)
    _open(figures, mode)
    month = timezone.make_aware(datetime.combine(today.replace(day=1), time.min), tz)
    figures.subscriptions = _subscriptions(mode, month)
    figures.attention = needs_attention(now)
    return figures


def day_number(starts: list[datetime], low: int = 0, high: int | None = None) -> Expression:
    """The number of the day whose ``[starts[n], starts[n + 1])`` holds ``created_on``.

    A tree of comparisons with the days' starts (five deep for 31), which every
    database runs natively: converting each row's time to the shop's zone in SQL
    is a Python function per row on SQLite, and the largest part of the page's time.
    """
    high = len(starts) - 1 if high is None else high
    if low == high:
        return Value(low)
    middle = (low + high + 1) // 2
    return Case(
        When(Q(created_on__lt=starts[middle]), then=day_number(starts, low, middle - 1)),
        default=day_number(starts, middle, high),
        output_field=IntegerField(),
    )


def _charges(figures: Figures, mode: str, starts: list[datetime]) -> None:
    # One pass over the period's rows (two queries would each read them all); the JSON
    # error is read only on failed charges.
    failed = ~Q(status=ChargeStatus.SUCCESSFUL)
    rows = (
        Charge.objects.filter(
            mode=mode,
            status__in=[ChargeStatus.SUCCESSFUL, *FAILED],
            created_on__gte=starts[0],
        )
        .annotate(
            day=day_number(starts),
            currency=Coalesce("charged_currency", "requested_currency"),
            taken=Coalesce("charged_amount", "requested_amount"),
            code=Case(When(failed, then=KeyTextTransform("code", "error"))),
        )
        .values("day", "status", "payment_type", "currency", "code")
        .annotate(count=Count("pk"), amount=Sum("taken"))
        .order_by()
    )
    for row in rows:
        day, count = row["day"], row["count"]
        age = DAYS - 1 - day
        if age < 0:
            continue  # created "tomorrow" by the gateway's clock: not a day of the chart
        if row["status"] == ChargeStatus.SUCCESSFUL:
            currency, amount = (row["currency"] or "").upper(), int(row["amount"] or 0)
            figures.takings[currency, row["payment_type"]].add(age, count, amount)
            figures.currency_takings[currency].add(age, count, amount)
            figures.daily_takings[day][currency] += amount
        else:
            figures.failures[str(row["status"]), str(row["code"] or "")].add(age, count, 0)
            figures.daily_failures[day] += count


def _refunds(figures: Figures, mode: str, starts: list[datetime]) -> None:
    rows = (
        Refund.objects.filter(mode=mode, status="successful", created_on__gte=starts[0])
        .annotate(day=day_number(starts), payment_type=F("charge__payment_type"))
        .values("day", "currency", "payment_type")
        .annotate(count=Count("pk"), amount=Sum("amount"))
        .order_by()
    )
    for row in rows:
        age = DAYS - 1 - row["day"]
        if age >= 0:
            currency, amount = (row["currency"] or "").upper(), int(row["amount"] or 0)
            figures.refunds[currency, row["payment_type"]].add(age, row["count"], amount)
            figures.currency_refunds[currency].add(age, row["count"], amount)


def _open(figures: Figures, mode: str) -> None:
    waiting = Charge.objects.filter(
        mode=mode, status=ChargeStatus.AWAITING, payment_type__in=OPEN_TYPES
    )
    figures.open_count = waiting.count()
    columns: Any = (
        "id",
        "gateway_id",
        "payment_type",
        "requested_amount",
        "requested_currency",
        "capture_at",
        "payment_deadline",
        "created_on",
    )
    # The deadline the customer's page showed (kept when it read it), else the one set.
    deadline = Coalesce("payment_deadline", "capture_at")
    figures.open_charges = list(
        waiting.only(*columns)
        .annotate(deadline=deadline)
        .order_by(F("deadline").asc(nulls_last=True), "created_on", "id")[:OPEN_LISTED]
    )


def _subscriptions(mode: str, month_start: datetime) -> SubscriptionCounts:
    active = Subscription.objects.filter(mode=mode, status__in=ACTIVE_SUBSCRIPTIONS).count()
    counted = Charge.objects.filter(
        mode=mode,
        subscription_id__isnull=False,
        created_on__gte=month_start,
        status__in=[ChargeStatus.SUCCESSFUL, *FAILED],
    ).aggregate(
        renewals=Count("pk", filter=Q(status=ChargeStatus.SUCCESSFUL)),
        failures=Count("pk", filter=Q(status__in=FAILED)),
    )
    return SubscriptionCounts(active, counted["renewals"], counted["failures"])
