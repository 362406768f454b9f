"""Failures the shop's owner must fix: told to the owner, never blamed on the customer.

When the gateway refuses the app token (401) or what it may do (403), knows no
such store (404 naming it), when a setting is missing, or when the gateway
cannot be reached at all, the customer is told that payments are unavailable
(``PayChargeError.customer_message``) and the owner hears of it here, once per
failed call: an ERROR log line (a WARNING for an unreachable gateway, which may
pass), the metric ``paycharge_owner_problems_total``, one :class:`OwnerProblem`
row per account and kind (what the dashboard's "needs attention" counts and the
admin's banner shows), never a secret.

A problem counts while it is :func:`current`: met within the last hour, and
under the ``PAYCHARGE`` setting in force (a digest of it is kept: once the owner
changes the settings, the old problem no longer counts).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, router, transaction
from django.db.models import F, Q
from django.utils import timezone

from .. import observe
from ..client.observe import GatewayAttempt, GatewayCall, Observer
from ..models import OwnerProblem

logger = logging.getLogger("django_paycharge.services")

#: How long after it was last met a problem still counts.
CURRENT_FOR = timedelta(hours=1)
#: How long recording a problem waits for its row on PostgreSQL (another open transaction
#: holding it): a record is worth little against a thread that would wait for ever.
LOCK_WAIT = "250ms"

Kind = OwnerProblem.Kind

#: What to look at, for each kind (the log line and the admin's banner).
HINTS = {
    Kind.CREDENTIALS: "the gateway refused the app token: check PAYCHARGE['SECRET'] and ['JWT']",
    Kind.PERMISSIONS: "the app token may not do this: check its type and the store it reaches",
    Kind.STORE: "the gateway has no such store: check PAYCHARGE['STORE_ID'] and the app token",
    Kind.SETTINGS: "a PAYCHARGE setting is missing or malformed",
    Kind.UNREACHABLE: "the gateway could not be reached: check PAYCHARGE['BASE_URL']",
}


def settings_digest() -> str:
    """A short digest of the ``PAYCHARGE`` setting (no secret can be read back from it)."""
    raw = repr(getattr(settings, "PAYCHARGE", None)).encode()
    return hashlib.sha256(b"django-paycharge owner problems\0" + raw).hexdigest()[:16]


def record(
    account: str, kind: str, *, status: int | None = None, code: str | None = None, detail: str = ""
) -> None:
    """Tell the owner of a failure that is theirs: a log line, a metric, the problem's row."""
    hint = HINTS.get(Kind(kind), "") if kind in Kind.values else ""
    level = logging.WARNING if kind == Kind.UNREACHABLE else logging.ERROR
    answer = f" (HTTP {status}{', ' + code if code else ''})" if status else ""
    logger.log(
        level,
        "Payments of account %s cannot be made: %s%s%s. Customers are told payments are "
        "unavailable and were not charged.",
        account,
        hint,
        answer,
        f" ({detail})" if detail else "",
    )
    observe.owner_problem(account, kind)
    now = timezone.now()
    values = {
        "detail": detail[:2000],
        "http_status": status,
        "code": (code or "")[:100],
        "settings_digest": settings_digest(),
        "last_seen_at": now,
    }
    alias = router.db_for_write(OwnerProblem)
    try:
        # Its own savepoint: a caller's transaction survives a failed write.
        with transaction.atomic(using=alias), _waiting_briefly(connections[alias]):
            updated = OwnerProblem.objects.filter(account=account, kind=kind).update(
                count=F("count") + 1, **values
            )
            if not updated:
                OwnerProblem.objects.create(
                    account=account, kind=kind, count=1, first_seen_at=now, **values
                )
    except DatabaseError:
        # The log line and the metric above have told the owner already.
        logger.exception("Owner problem of account %s not recorded", account)


@contextmanager
def _waiting_briefly(connection: Any) -> Iterator[None]:
    """Inside the record's savepoint: on PostgreSQL, wait at most LOCK_WAIT for its row.

    A gateway call can fail on a thread of its own (a sync's read-ahead) while the thread
    that waits for it holds the problem's row in its open transaction (it met the same
    problem first): waiting for that row would wait for ever. Past the wait the savepoint
    rolls back, which also undoes the setting; kept, the setting is put back."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout')")
        (before,) = cursor.fetchone()
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_WAIT])
    yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [before])


def current(now: datetime | None = None) -> Q:
    """The problems that still count: met recently, under the settings in force."""
    now = now or timezone.now()
    return Q(last_seen_at__gte=now - CURRENT_FOR, settings_digest=settings_digest())


def current_problems(now: datetime | None = None) -> list[OwnerProblem]:
    """The problems that still count, the latest first (for the admin's banner)."""
    return list(OwnerProblem.objects.filter(current(now)).order_by("-last_seen_at")[:20])


def watching(account: str, inner: Observer) -> Observer:
    """``inner`` (the account's metrics and traces), and each call's last failed attempt
    that is the owner's to fix :func:`record`-ed."""

    def observe_call(call: GatewayCall) -> _Watched:
        return _Watched(account, inner(call))

    return observe_call


class _Watched:
    __slots__ = ("account", "context", "inner")

    def __init__(self, account: str, context: Any) -> None:
        self.account, self.context = account, context
        self.inner: Callable[[GatewayAttempt], None] | None = None

    def __enter__(self) -> Callable[[GatewayAttempt], None]:
        self.inner = self.context.__enter__()
        return self.report

    def __exit__(self, *exc_info: Any) -> bool | None:
        return self.context.__exit__(*exc_info)  # type: ignore[no-any-return]

    def report(self, attempt: GatewayAttempt) -> None:
        assert self.inner is not None
        self.inner(attempt)
        if attempt.owner_problem and not attempt.retrying:
            status = attempt.status if isinstance(attempt.status, int) else None
            detail = (
                "" if status else f"{attempt.status} on {attempt.call.method} {attempt.call.route}"
            )
            record(
                self.account, attempt.owner_problem, status=status, code=attempt.code, detail=detail
            )
