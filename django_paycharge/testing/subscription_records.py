"""The fake's subscription records: a subscription, its scheduled payments, its calendar.

Rendered in the shape of the gateway's recorded answers (univapay-java-sdk
``responses/subscription/*.json``). The rules (which status allows what, when a
payment is charged) are in :mod:`.subscriptions`.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, field

from .basics import Json, formatted, iso
from .records import Store, TransactionToken

_MONTHS = {"monthly": 1, "bimonthly": 2, "quarterly": 3, "semiannually": 6, "annually": 12}
_DAYS = {"daily": 1, "weekly": 7, "biweekly": 14}
_DURATION = re.compile(r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?")


def add_months(day: dt.date, months: int) -> dt.date:
    """``day`` moved by whole months, kept within the month (Jan 31 + 1 month = Feb 28)."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return day.replace(
        year=year, month=month, day=min(day.day, calendar.monthrange(year, month)[1])
    )


def _parts(duration: str) -> tuple[int, int]:
    """``(months, days)`` of an ISO-8601 duration of years, months, weeks and days."""
    found = _DURATION.fullmatch(duration)
    years, months, weeks, days = (int(g or 0) for g in (found.groups() if found else (0,) * 4))
    return 12 * years + months, 7 * weeks + days


def add_duration(day: dt.date, duration: str) -> dt.date:
    """``day`` moved by an ISO-8601 duration (``P2D``, ``P1M``)."""
    months, days = _parts(duration)
    return add_months(day, months) + dt.timedelta(days=days)


def due_date(
    first: dt.date, cycle: int, period: str | None, cyclical_period: str | None
) -> dt.date:
    """The due date of payment number ``cycle`` (0 is the first, due on ``first``).

    Counted from the first day, not from the previous payment, so a subscription started
    on the 31st is due on the last day of shorter months and on the 31st again after them.
    """
    if period in _MONTHS:
        return add_months(first, cycle * _MONTHS[period])
    if period in _DAYS:
        return first + dt.timedelta(days=cycle * _DAYS[period])
    months, days = _parts(cyclical_period or "P1M")
    return add_months(first, cycle * months) + dt.timedelta(days=cycle * days)


@dataclass(slots=True)
class PaymentRecord:
    """One scheduled payment of a subscription."""

    id: str
    due_date: dt.date
    amount: int
    currency: str
    zone_id: str
    created: dt.datetime
    updated: dt.datetime
    is_last_payment: bool = False
    is_paid: bool = False
    successful_payment_date: dt.date | None = None
    retry_date: dt.date | None = None
    charge_ids: list[str] = field(default_factory=list)

    def to_json(self) -> Json:
        """A scheduled payment as the gateway answers it."""
        return {
            "id": self.id,
            "due_date": self.due_date.isoformat(),
            "zone_id": self.zone_id,
            "amount": self.amount,
            "currency": self.currency,
            "amount_formatted": formatted(self.amount, self.currency),
            "is_paid": self.is_paid,
            "is_last_payment": self.is_last_payment,
            "created_on": iso(self.created),
            "updated_on": iso(self.updated),
            "successful_payment_date": _day(self.successful_payment_date),
            "retry_date": _day(self.retry_date),
        }


def _day(value: dt.date | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(slots=True)
class SubscriptionRecord:
    """A subscription: what it was created with, its status, its payments."""

    id: str
    store: Store
    token: TransactionToken
    amount: int
    currency: str
    created: dt.datetime
    updated: dt.datetime
    body: Json  # the create body's optional parts, echoed back as sent
    period: str | None = None
    cyclical_period: str | None = None
    initial_amount: int | None = None
    cycles: int | None = None  # a fixed number of payments; None: until canceled
    schedule: Json = field(default_factory=dict)
    metadata: Json = field(default_factory=dict)
    status: str = "unverified"
    mode: str = "test"
    #: Suspended with ``termination_mode=on_next_payment``: takes effect on the next due day.
    suspend_on_next_payment: bool = False
    payments: list[PaymentRecord] = field(default_factory=list)

    @property
    def paid_count(self) -> int:
        """How many of its payments were paid."""
        return sum(1 for p in self.payments if p.is_paid)

    def next_payment(self) -> PaymentRecord | None:
        """The first unpaid payment, if any."""
        return next((p for p in self.payments if not p.is_paid), None)

    def to_json(self) -> Json:
        """The subscription as the gateway answers it."""
        cycles_left = None if self.cycles is None else self.cycles - self.paid_count
        amount_left = None if cycles_left is None else cycles_left * self.amount
        upcoming = self.next_payment()
        return {
            **self.body,
            "id": self.id,
            "store_id": self.store.id,
            "merchant_id": self.store.merchant_id,
            "transaction_token_id": self.token.id,
            "amount": self.amount,
            "currency": self.currency,
            "amount_formatted": formatted(self.amount, self.currency),
            "initial_amount": self.initial_amount,
            "initial_amount_formatted": formatted(self.initial_amount, self.currency),
            "period": self.period,
            "cyclical_period": self.cyclical_period,
            "schedule_settings": dict(self.schedule),
            "status": self.status,
            "metadata": dict(self.metadata),
            "mode": self.mode,
            "created_on": iso(self.created),
            "updated_on": iso(self.updated),
            "next_payment": upcoming.to_json() if upcoming is not None else None,
            "cycles_left": cycles_left,
            "payments_left": cycles_left,
            "amount_left": amount_left,
            "amount_left_formatted": formatted(amount_left, self.currency),
        }
