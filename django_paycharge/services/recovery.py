"""Settle every request left open (a crash, a lost answer), and check abandoned ones.

Creates, captures, cancels, refunds, metadata updates and subscription requests alike,
through the one machine (:mod:`.lifecycle.exactly_once`). Recovery only ever *asks*: an
open request is sent again with its own key (the gateway answers with what it did, says the
key is still in progress, or does the one thing asked for); an abandoned
request is only looked for (reads). Nothing is marked failed without the
gateway's refusal, and a request older than ``CHARGE_REQUEST_MAX_AGE`` is
abandoned instead of sent.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from .. import conf
from ..models import (
    OPEN_REQUEST_STATES,
    ChargeActionRequest,
    ChargeRequest,
    RequestState,
    SubscriptionRequest,
)
from ..queue import background_task
from .charges import CREATE
from .lifecycle import (
    CANCEL,
    CAPTURE,
    DONE,
    REFUND,
    UPDATE,
    Asked,
    RequestKind,
    Result,
    Row,
    abandon,
    ask,
    check,
    look_for,
    request_name,
)
from .subscriptions import KINDS as SUBSCRIPTION_KINDS

logger = logging.getLogger("django_paycharge.services")

#: The kind of each request on a charge, by the name its row stores. Recovery reads
#: rows of every kind, and this table (with ``CREATE`` for charge requests) alone says
#: which kind settles a row; every other caller passes its own.
ACTIONS: dict[str, RequestKind[ChargeActionRequest, object]] = {
    ChargeActionRequest.Kind.CAPTURE: CAPTURE,
    ChargeActionRequest.Kind.CANCEL: CANCEL,
    ChargeActionRequest.Kind.REFUND: REFUND,
    ChargeActionRequest.Kind.UPDATE: UPDATE,
}

#: The kinds of a charge's later life (``recover_action_requests``).
ACTION_KINDS = frozenset(ChargeActionRequest.Kind.values)
#: A subscription's create and changes: rows of their own, kinds in ``SUBSCRIPTION_KINDS``.
SUBSCRIPTION_KIND_NAMES = frozenset(SubscriptionRequest.Kind.values)

Request = ChargeRequest | ChargeActionRequest | SubscriptionRequest


def kind_of(request: Request) -> RequestKind[Any, object]:
    """The kind that settles a stored row: the one table recovery reads rows by."""
    if isinstance(request, ChargeRequest):
        return CREATE
    if isinstance(request, SubscriptionRequest):
        return SUBSCRIPTION_KINDS[request.kind]
    return ACTIONS[request.kind]


def kind_name(request: Request) -> str:
    """The name of a stored row's kind (``create`` for a charge request)."""
    return kind_of(request).name


_COUNTS = ("settled", "failed", "still_pending", "abandoned", "found", "left_alone")


@dataclass
class RecoveryResult:
    """Counts of one recovery run (all kinds, and per kind), and the keys it abandoned."""

    settled: int = 0
    failed: int = 0
    still_pending: int = 0
    abandoned: int = 0
    found: int = 0
    #: Open requests younger than ``older_than``: perhaps still in flight, not touched.
    left_alone: int = 0
    abandoned_keys: list[str] = field(default_factory=list)
    #: ``{kind: {count: n}}`` for the kinds that had anything to count.
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, kind: str, count: str, n: int = 1) -> None:
        setattr(self, count, getattr(self, count) + n)
        self.by_kind.setdefault(kind, Counter())[count] += n

    def counts(self) -> dict[str, int]:
        """The counts alone, by name."""
        return {name: getattr(self, name) for name in _COUNTS}

    def as_dict(self) -> dict[str, Any]:
        """The counts, the abandoned keys and the counts per kind, as JSON."""
        per_kind = {kind: {n: c[n] for n in _COUNTS} for kind, c in self.by_kind.items()}
        return {**self.counts(), "abandoned_keys": list(self.abandoned_keys), "by_kind": per_kind}


def recover_requests(
    *,
    older_than: timedelta = timedelta(seconds=30),
    max_age: timedelta | None = None,
    kinds: Iterable[str] | None = None,
) -> RecoveryResult:
    """Settle open requests not touched for ``older_than``; abandon those past ``max_age``.

    Every kind (``kinds`` limits it: ``create``, ``capture``, ``cancel``,
    ``refund``, ``update``, and the ``subscription_*`` kinds). ``max_age`` defaults to
    ``PAYCHARGE["CHARGE_REQUEST_MAX_AGE"]``. Abandoned requests whose outcome
    is unknown are looked for (reads only) until ``CHARGE_REQUEST_GRACE`` after
    their last send says nothing came of them.
    """
    now = timezone.now()
    if max_age is None:
        max_age = timedelta(seconds=conf.get_seconds("CHARGE_REQUEST_MAX_AGE"))
    every = {"create", *ACTION_KINDS, *SUBSCRIPTION_KIND_NAMES}
    wanted = set(kinds) if kinds is not None else every
    cutoff = now - older_than
    quiet = Q(sent_at__lte=cutoff) | Q(sent_at__isnull=True, created_at__lte=cutoff)
    result = RecoveryResult()
    for model in _models(wanted):
        open_requests = _of_kinds(model, wanted).filter(state__in=OPEN_REQUEST_STATES)
        for request in open_requests.exclude(quiet).iterator():
            result.add(kind_name(request), "left_alone")
        for request in open_requests.filter(quiet).order_by("created_at").iterator():
            if request.created_at <= now - max_age:
                _expire(request, result)
            else:
                _settle(request, result)
    for request in _unresolved_abandoned(wanted):
        outcome = check(kind_of(request), request)[0]
        if outcome == DONE:
            result.add(kind_name(request), "found")
    return result


#: The name it had when only creates were recovered: it settles every kind too.
recover_charge_requests = recover_requests


@background_task
def recover_charge_requests_task(older_than_seconds: float = 30.0) -> dict[str, Any]:
    """Settle requests that move money left in flight, every kind (see :func:`recover_requests`)."""
    return recover_requests(older_than=timedelta(seconds=older_than_seconds)).as_dict()


def recover_action_requests(*, older_than: timedelta = timedelta(seconds=30)) -> dict[str, int]:
    """Settle captures, cancels, refunds and updates left open: :func:`recover_requests`
    for those kinds, counted as ``{"settled", "failed", "still_pending"}``."""
    result = recover_requests(older_than=older_than, kinds=ACTION_KINDS)
    return {name: getattr(result, name) for name in ("settled", "failed", "still_pending")}


def _settle(request: Request, result: RecoveryResult) -> None:
    result.add(kind_name(request), _count(ask(kind_of(request), request, budget=0)))


def _count(asked: Asked[Row, Result]) -> str:
    if asked.result is not None or asked.settled is not None:
        return "settled"
    if asked.refused is not None or asked.not_sent is not None:
        return "failed"  # ended, nothing done (not sent: never sent again by us)
    return "still_pending"  # in progress or no answer: never guessed to be failed


def _expire(request: Request, result: RecoveryResult) -> None:
    name = kind_name(request)
    if request.sent_at is not None and _look_for(request) is not None:
        result.add(name, "settled")
        return
    if _abandon(request):
        result.add(name, "abandoned")
        result.abandoned_keys.append(request_name(request))


def _look_for(request: Request) -> object | None:
    return look_for(kind_of(request), request)


def _abandon(request: Request) -> bool:
    return abandon(kind_of(request), request, None, reason="max_age")


def _models(kinds: set[str]) -> list[type[Any]]:
    models: list[type[Any]] = [ChargeRequest] if "create" in kinds else []
    models += [ChargeActionRequest] if kinds & ACTION_KINDS else []
    return models + ([SubscriptionRequest] if kinds & SUBSCRIPTION_KIND_NAMES else [])


def _of_kinds(model: type[Any], kinds: set[str]) -> Any:
    if model is ChargeRequest:
        return ChargeRequest.objects.all()
    if model is SubscriptionRequest:
        return SubscriptionRequest.objects.filter(kind__in=kinds).select_related("subscription")
    return ChargeActionRequest.objects.filter(kind__in=kinds).select_related("charge")


def _unresolved_abandoned(kinds: set[str]) -> Iterator[Any]:
    """Abandoned requests, once sent, whose outcome is still unknown (bounded: see the grace)."""
    for model in _models(kinds):
        kind_filter = _of_kinds(model, kinds)
        candidates = kind_filter.filter(state=RequestState.ABANDONED, sent_at__isnull=False)
        if model is ChargeRequest:
            candidates = candidates.filter(charge__isnull=True)
        for request in candidates.order_by("created_at"):
            error = request.error if isinstance(request.error, dict) else {}
            if error.get("outcome") != kind_of(request).nothing_done:
                yield request
