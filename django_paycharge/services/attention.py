"""What needs someone's attention, counted in one place for the dashboard and the metrics.

:func:`needs_attention` gives each item's count and the admin list that
shows exactly those rows (a URL name and its filter). The staff dashboard
lists them; the Prometheus view exposes them as ``paycharge_attention``.
A new kind of item is one more entry here, and both show it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import conf
from ..models import (
    Announcement,
    ChargeActionRequest,
    ChargeRequest,
    QuarantinedItem,
    SyncCheckpoint,
    WebhookDelivery,
)
from ..outbox import count_not_heard, stuck

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


def sync_behind(now: datetime) -> Q:
    """Sync checkpoints behind: last completed longer ago than ``SYNC_BEHIND_AFTER`` (or
    never, with a run started that long ago), or whose last run failed."""
    limit = now - timedelta(seconds=conf.get_seconds("SYNC_BEHIND_AFTER"))
    never = Q(last_completed_at__isnull=True) & Q(run_started_at__lt=limit)
    return Q(last_completed_at__lt=limit) | never | ~Q(last_error="")


def needs_attention(now: datetime | None = None) -> list[AttentionItem]:
    """Every item, zero counts included, in the order the dashboard shows them (6 queries)."""
    now = now or timezone.now()
    return [*_requests(), *_deliveries(now), *_mirror(now)]


def _requests() -> list[AttentionItem]:
    """Requests that move money whose outcome the gateway has not confirmed."""
    unknown = ChargeRequest.State.UNKNOWN
    return [
        AttentionItem(
            "charge_requests_unknown",
            _("Charge requests with an unknown outcome"),
            ChargeRequest.objects.filter(state=unknown).count(),
            "admin:django_paycharge_chargerequest_changelist",
            f"state__exact={unknown}",
        ),
        AttentionItem(
            "action_requests_unconfirmed",
            _("Captures, cancels and refunds not confirmed by the gateway"),
            ChargeActionRequest.objects.filter(state=unknown).count(),
            "admin:django_paycharge_chargeactionrequest_changelist",
            f"state__exact={unknown}",
        ),
    ]


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
