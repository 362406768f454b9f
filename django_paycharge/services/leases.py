"""Leased claims on webhook deliveries: who processes one, since when, and until when.

A claim is one conditional UPDATE, and no lock is held while the delivery is
processed (which re-reads the gateway and can take seconds). It succeeds only
if the delivery is waiting, or if its last claim's lease ran out: the process
that held it died or hangs, and whoever comes next (a worker, a task, a
command run) takes it over. The claimant records its result with an UPDATE
that matches its own claim only (``claimed_at``), so a claimant that was
taken over cannot overwrite the newer result.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Any

from django.db.models import F, Min, Q
from django.utils import timezone
from django.utils.translation import gettext

from .. import conf, observe
from ..models import WebhookDelivery

#: Claims of one delivery (its first processing included) before it is left failed.
MAX_ATTEMPTS = 5

Status = WebhookDelivery.Status


def claimant(label: str) -> str:
    """How a claim names its holder in the admin: what, on which host, which process."""
    return f"{label} ({socket.gethostname()} pid {os.getpid()})"[:200]


def stuck(now: datetime) -> Q:
    """Claimed, and the lease ran out (or was never set: claimed before leases existed)."""
    return Q(status=Status.PROCESSING) & (Q(lease_until__lte=now) | Q(lease_until__isnull=True))


def waiting(now: datetime) -> Q:
    """What a worker should take: received, or stuck with attempts left."""
    return Q(status=Status.RECEIVED) | (stuck(now) & Q(attempts__lt=MAX_ATTEMPTS))


def claim(
    delivery_pk: int, *, by: str, retry_failed: bool = False, force: bool = False
) -> WebhookDelivery | None:
    """Claim one delivery for processing; None when it is not to be taken now.

    Waiting deliveries are taken; ``retry_failed`` also takes a failed one;
    ``force`` (the admin's Reprocess) any one that no live claim holds.
    """
    now = timezone.now()
    allowed = waiting(now)
    if retry_failed:
        allowed |= Q(status=Status.FAILED)
    if force:
        allowed |= Q(status__in=[Status.FAILED, Status.PROCESSED, Status.IGNORED]) | stuck(now)
    values = {
        "status": Status.PROCESSING,
        "attempts": F("attempts") + 1,
        "claimed_at": now,
        "lease_until": now + conf.webhook_lease(),
        "claimed_by": by[:200],
    }
    rows = WebhookDelivery.objects.filter(allowed, pk=delivery_pk)
    # A claim of a waiting delivery first (one statement); then of a stuck one, which
    # takes over a dead worker's claim and is counted as such.
    taken_over = False
    if not rows.exclude(status=Status.PROCESSING).update(**values):
        taken_over = bool(rows.filter(status=Status.PROCESSING).update(**values))
        if not taken_over:
            give_up_exhausted(now, pk=delivery_pk)
            return None
    delivery = WebhookDelivery.objects.get(pk=delivery_pk)
    if taken_over:
        observe.lease_taken_over(delivery.account)
    return delivery


def claim_next(*, by: str) -> WebhookDelivery | None:
    """Claim the oldest waiting delivery (several workers may race: each tries the next)."""
    now = timezone.now()
    candidates = (
        WebhookDelivery.objects.filter(waiting(now))
        .order_by("received_at", "pk")
        .values_list("pk", flat=True)
    )
    for pk in candidates[:20]:
        delivery = claim(pk, by=by)
        if delivery is not None:
            return delivery
    return None


def finish(delivery: WebhookDelivery, **update: Any) -> bool:
    """Record the outcome of ``delivery``'s claim; False if another run took it over meanwhile."""
    mine = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=Status.PROCESSING, claimed_at=delivery.claimed_at
    )
    # The gateway's request id of the processing's last answer: logs, rows and traces join on it.
    update.setdefault("gateway_request_id", observe.request_id())
    if not mine.update(lease_until=None, **update):
        return False
    status = update.get("status", Status.PROCESSING)
    if status != Status.RECEIVED:  # a claim given back is not an end
        finished_at = update.get("processed_at")
        observe.delivery_finished(
            delivery.account, delivery.event, status, delivery.received_at, finished_at
        )
    return True


def release(delivery: WebhookDelivery) -> None:
    """Give a claim back unfinished (the process is shutting down): waiting again at once."""
    finish(delivery, status=Status.RECEIVED, attempts=F("attempts") - 1)


def give_up_exhausted(now: datetime, pk: int | None = None) -> int:
    """Leave failed the stuck deliveries whose every attempt died; how many.

    Without this, a delivery whose processing kills its worker each time
    would be taken over forever.
    """
    query = WebhookDelivery.objects.filter(stuck(now), attempts__gte=MAX_ATTEMPTS)
    if pk is not None:
        query = query.filter(pk=pk)
    return query.update(
        status=Status.FAILED,
        lease_until=None,
        processed_at=now,
        last_error=gettext(
            "Processing was claimed %(attempts)d times and never finished (its worker died "
            "or hung each time). It is not tried again automatically: reprocess it from the "
            "admin once the cause is fixed."
        )
        % {"attempts": MAX_ATTEMPTS},
    )


def next_expiry() -> datetime | None:
    """When the earliest live claim's lease runs out (None when no delivery is claimed)."""
    live = WebhookDelivery.objects.filter(status=Status.PROCESSING, lease_until__isnull=False)
    earliest: datetime | None = live.aggregate(at=Min("lease_until"))["at"]
    return earliest
