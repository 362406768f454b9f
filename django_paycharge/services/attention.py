"""What needs someone's attention, counted in one place for the dashboard and the metrics.

:func:`needs_attention` gives each item's count and the admin list that
shows exactly those rows (a URL name and its filter). The staff dashboard
lists them; the Prometheus view exposes them as ``paycharge_attention``.
A new kind of item is one more entry here, and both show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import BigIntegerField, Case, Count, Q, Sum, When
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Upper
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import conf
from ..models import (
    Announcement,
    ChargeActionRequest,
    ChargeRequest,
    OwnerProblem,
    QuarantinedItem,
    SyncCheckpoint,
    WebhookDelivery,
)
from ..outbox import count_not_heard, stuck
from . import problems
from .charges import CREATE
from .lifecycle import outcome_unknown
from .recovery import ACTIONS

Status = WebhookDelivery.Status


@dataclass(frozen=True)
class AttentionItem:
    """One kind of thing to look at: how many, and the admin list of exactly those."""

    key: str
    label: Any
    count: int
    #: The admin changelist's URL name and the query string of its filter.
    url_name: str
    query: str
    #: Money these rows may have moved, in minor units per currency (empty: none counted).
    amounts: Mapping[str, int] = field(default_factory=dict)
    #: What the amounts are, for people ("may have been refunded").
    amounts_label: Any = ""


def sync_behind(now: datetime) -> Q:
    """Sync checkpoints behind: last completed longer ago than ``SYNC_BEHIND_AFTER`` (or
    never, with a run started that long ago), or whose last run failed."""
    limit = now - timedelta(seconds=conf.get_seconds("SYNC_BEHIND_AFTER"))
    never = Q(last_completed_at__isnull=True) & Q(run_started_at__lt=limit)
    return Q(last_completed_at__lt=limit) | never | ~Q(last_error="")


def needs_attention(now: datetime | None = None) -> list[AttentionItem]:
    """Every item, zero counts included, in the order the dashboard shows them (7 queries)."""
    now = now or timezone.now()
    return [*_owner(now), *_requests(), *_deliveries(now), *_mirror(now)]


def _owner(now: datetime) -> list[AttentionItem]:
    """Payments failing on the shop's own settings, or an unreachable gateway (one query)."""
    return [
        AttentionItem(
            "owner_problems",
            _("Payments failing on the shop's settings or an unreachable gateway"),
            OwnerProblem.objects.filter(problems.current(now)).count(),
            "admin:django_paycharge_ownerproblem_changelist",
            "current=yes",
        )
    ]


def unknown_outcome(model: type[ChargeRequest] | type[ChargeActionRequest]) -> Q:
    """Rows of ``model`` whose outcome is unknown: sent (or to be sent) and not settled,
    abandoned ones included until they are found or known to have done nothing.

    Each kind records "nothing done" in its own words (the exactly-once machine's
    kinds); the admin's lists filter with this too, so a count and its list agree.
    """
    if model is ChargeRequest:
        return outcome_unknown(CREATE.nothing_done)
    by_record: dict[str, list[str]] = {}
    for name in ChargeActionRequest.Kind.values:
        by_record.setdefault(ACTIONS[name].nothing_done, []).append(name)
    found = Q(pk__in=[])
    for record, kinds in by_record.items():
        found |= Q(kind__in=kinds) & outcome_unknown(record)
    return found


#: The kinds whose unknown requests may have moved an amount of their own (``params``).
MONEY_KINDS = ("create", ChargeActionRequest.Kind.REFUND)


def _requests() -> list[AttentionItem]:
    """Requests that move money whose outcome is unknown, with the amounts they may have
    moved per currency: a create's charge or a refund (two queries)."""
    query = "outcome=unknown"
    creates, created = _unknown(ChargeRequest)
    actions, refunded = _unknown(ChargeActionRequest)
    return [
        AttentionItem(
            "charge_requests_unknown",
            _("Charge requests with an unknown outcome"),
            creates,
            "admin:django_paycharge_chargerequest_changelist",
            query,
            amounts=created,
            amounts_label=_("may have been charged"),
        ),
        AttentionItem(
            "action_requests_unconfirmed",
            _("Captures, cancels, refunds and updates with an unknown outcome"),
            actions,
            "admin:django_paycharge_chargeactionrequest_changelist",
            query,
            amounts=refunded,
            amounts_label=_("may have been refunded"),
        ),
    ]


def _unknown(model: type[ChargeRequest] | type[ChargeActionRequest]) -> tuple[int, dict[str, int]]:
    """How many rows of ``model`` have an unknown outcome, and the amounts of those that
    move money of their own, per currency (one query: grouped by currency)."""
    currency = Upper(KeyTextTransform("currency", "params"))
    amount: Cast | Case = Cast(KeyTextTransform("amount", "params"), BigIntegerField())
    if model is ChargeActionRequest:
        amount = Case(When(kind__in=MONEY_KINDS, then=amount))
    rows = (
        model.objects.filter(unknown_outcome(model))
        .values(money=currency)
        .annotate(count=Count("pk"), total=Sum(amount))
        .order_by()
    )
    count, amounts = 0, {}
    for row in rows:
        count += row["count"]
        if row["total"]:
            amounts[row["money"] or ""] = int(row["total"])
    return count, dict(sorted(amounts.items()))


def _deliveries(now: datetime) -> list[AttentionItem]:
    """Webhook deliveries waiting, stuck or failed (one query)."""
    counts = WebhookDelivery.objects.filter(
        status__in=[Status.RECEIVED, Status.PROCESSING, Status.FAILED]
    ).aggregate(
        waiting=Count("pk", filter=Q(status=Status.RECEIVED)),
        stuck=Count("pk", filter=stuck(now)),
        failed=Count("pk", filter=Q(status=Status.FAILED)),
    )
    changelist = "admin:django_paycharge_webhookdelivery_changelist"
    return [
        AttentionItem(
            "deliveries_waiting",
            _("Webhook deliveries not processed yet"),
            counts["waiting"],
            changelist,
            f"status__exact={Status.RECEIVED}",
        ),
        AttentionItem(
            "deliveries_stuck",
            _("Webhook deliveries stuck (their worker died)"),
            counts["stuck"],
            changelist,
            "status__exact=stuck",
        ),
        AttentionItem(
            "deliveries_failed",
            _("Webhook deliveries that failed"),
            counts["failed"],
            changelist,
            f"status__exact={Status.FAILED}",
        ),
    ]


def _mirror(now: datetime) -> list[AttentionItem]:
    """What the mirror could not store or is behind on, and receivers that did not hear."""
    return [
        AttentionItem(
            "quarantined",
            _("Items from the gateway that could not be stored"),
            QuarantinedItem.objects.filter(resolved_at__isnull=True).count(),
            "admin:django_paycharge_quarantineditem_changelist",
            "resolved=no",
        ),
        AttentionItem(
            "syncs_behind",
            _("Syncs behind or failed"),
            SyncCheckpoint.objects.filter(sync_behind(now)).count(),
            "admin:django_paycharge_synccheckpoint_changelist",
            "behind=yes",
        ),
        AttentionItem(
            "announcements_unheard",
            _("Announcements a receiver did not hear"),
            count_not_heard(),
            "admin:django_paycharge_announcement_changelist",
            f"status__exact={Announcement.Status.FAILED}",
        ),
    ]
