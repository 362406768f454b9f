"""Settle charge requests left open (a crash, a lost answer), and check abandoned ones.

Recovery only ever *asks*: an open request is sent again with its own key (the
gateway answers with the charge it made, says the key is still in progress,
or makes the one charge asked for); an abandoned request is only looked for
(a read). Nothing is marked failed without the gateway's refusal, and a
request older than ``CHARGE_REQUEST_MAX_AGE`` is abandoned instead of sent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from .. import conf
from ..exceptions import PayChargeError
from ..models import ChargeRequest
from .charge_requests import abandon, ask_gateway, find_remote_charge, link_charge
from .charges import refresh_charge
from .outcomes import check_charge_request

logger = logging.getLogger("django_paycharge.services")

State = ChargeRequest.State


@dataclass
class RecoveryResult:
    """Counts of one recovery run, and the keys of the requests it abandoned."""

    settled: int = 0
    failed: int = 0
    still_pending: int = 0
    abandoned: int = 0
    found: int = 0
    #: Open requests younger than ``older_than``: perhaps still in flight, not touched.
    left_alone: int = 0
    abandoned_keys: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """The counts alone, by name."""
        return {
            "settled": self.settled,
            "failed": self.failed,
            "still_pending": self.still_pending,
            "abandoned": self.abandoned,
            "found": self.found,
            "left_alone": self.left_alone,
        }

    def as_dict(self) -> dict[str, Any]:
        """The counts and the abandoned keys, as JSON (task results, periodic reports)."""
        return {**self.counts(), "abandoned_keys": list(self.abandoned_keys)}


def recover_charge_requests(
    *, older_than: timedelta = timedelta(seconds=30), max_age: timedelta | None = None
) -> RecoveryResult:
    """Settle open requests not touched for ``older_than``; abandon those past ``max_age``.

    ``max_age`` defaults to ``PAYCHARGE["CHARGE_REQUEST_MAX_AGE"]``. Abandoned
    requests whose outcome is unknown are looked for (one read each) until
    ``CHARGE_REQUEST_GRACE`` after their last send says nothing can come of them.
    """
    now = timezone.now()
    if max_age is None:
        max_age = timedelta(seconds=conf.get_seconds("CHARGE_REQUEST_MAX_AGE"))
    cutoff = now - older_than
    quiet = Q(sent_at__lte=cutoff) | Q(sent_at__isnull=True, created_at__lte=cutoff)
    result = RecoveryResult()
    open_requests = ChargeRequest.objects.filter(state__in=ChargeRequest.OPEN_STATES)
    result.left_alone = open_requests.exclude(quiet).count()
    requests = open_requests.filter(quiet)
    for request in requests.order_by("created_at").iterator():
        if request.created_at <= now - max_age:
            _expire(request, result)
        else:
            _settle(request, result)
    for request in _unresolved_abandoned():
        check = check_charge_request(request)
        if check is not None and check.outcome == "charged":
            result.found += 1
    return result


def _settle(request: ChargeRequest, result: RecoveryResult) -> None:
    if request.charge_gateway_id is not None:
        # The gateway answered and the mirror failed: read that charge, never create.
        try:
            remote_charge = refresh_charge(request.charge_gateway_id, account=request.account)
        except PayChargeError:
            result.still_pending += 1
            return
        link_charge(request, remote_charge)
        result.settled += 1
        return
    asked = ask_gateway(request, budget=0)
    if asked.charge is not None or asked.settled is not None:
        result.settled += 1
    elif asked.refused is not None:
        result.failed += 1
    else:
        result.still_pending += 1  # in progress or no answer: never guessed to be failed


def _expire(request: ChargeRequest, result: RecoveryResult) -> None:
    if request.sent_at is not None and find_remote_charge(request) is not None:
        result.settled += 1
        return
    if abandon(request, None, reason="max_age"):
        result.abandoned += 1
        result.abandoned_keys.append(request.caller_key or str(request.idempotency_key))


def _unresolved_abandoned() -> list[ChargeRequest]:
    """Abandoned requests, once sent, whose outcome is still unknown (bounded: see the grace)."""
    candidates = ChargeRequest.objects.filter(
        state=State.ABANDONED, charge__isnull=True, sent_at__isnull=False
    ).exclude(error__outcome="not_charged")
    return list(candidates.order_by("created_at"))
