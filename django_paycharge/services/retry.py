"""Retry a short write transaction that lost a race for the database (busy, deadlock).

After the gateway has said yes, a local write that fails for a moment must not
reach the customer: SQLite answers "database is locked" at once when a
transaction that has read tries to write while another connection writes (its
busy time-out does not apply to that upgrade), PostgreSQL aborts one side of a
deadlock or of a serialization conflict. Each of those is worth running the
whole transaction again, a few times, with a short pause.

On SQLite with deferred transactions (Django's default) the transaction also
starts with a write that changes nothing: SQLite then takes its write lock at
once, waiting for it up to the busy time-out, instead of failing later when a
read has to become a write.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, router, transaction
from django.db.models import F

from ..client.backoff import Backoff
from ..models import ChargeRequest

T = TypeVar("T")

logger = logging.getLogger("django_paycharge.services")

#: Attempts of one write (the first included), and the pauses' base and cap in seconds.
ATTEMPTS = 8
PAUSE = 0.05
PAUSE_MAX = 1.0

# SQLSTATEs of PostgreSQL's conflicts that a retry resolves.
_PG_RETRY_STATES = frozenset({"40001", "40P01", "55P03"})  # serialization, deadlock, lock
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")


def is_transient(exc: BaseException) -> bool:
    """True for a database error that running the same transaction again may not meet."""
    if not isinstance(exc, OperationalError):
        # psycopg's SerializationFailure / DeadlockDetected arrive as OperationalError
        # too; anything else (IntegrityError, ProgrammingError) is not a race.
        return False
    cause = exc.__cause__
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if state in _PG_RETRY_STATES:
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _SQLITE_BUSY)


def retry_transient(
    func: Callable[[], T],
    *,
    using: str = DEFAULT_DB_ALIAS,
    durable: bool = False,
    attempts: int | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Run ``func`` in its own transaction on ``using``; run it again on a transient error.

    Inside a transaction of the caller's nothing is retried (the error has spoilt
    that transaction: only its owner can start again), so the error is raised;
    with ``durable`` (the write must be committed when this returns) such a
    caller gets Django's ``RuntimeError`` instead.
    """
    if connections[using].in_atomic_block:
        with transaction.atomic(using=using, durable=durable):
            return func()
    attempts = attempts or ATTEMPTS
    for attempt in range(attempts):
        try:
            with transaction.atomic(using=using, durable=durable):
                _lock_for_writing(using)
                return func()
        except OperationalError as exc:
            if not is_transient(exc) or attempt + 1 >= attempts:
                raise
            # Half fixed, half random: writers spread out, and the pauses add up to a
            # known minimum (about 1.8 s over the eight attempts) however the dice fall.
            pause = Backoff(PAUSE, PAUSE_MAX, jitter="equal").delay(attempt)
            logger.info(
                "Write on %s met %s (attempt %d of %d): trying again in %.0f ms",
                using,
                type(exc.__cause__ or exc).__name__,
                attempt + 1,
                attempts,
                pause * 1000,
            )
            sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


def _lock_for_writing(using: str) -> None:
    """On SQLite with deferred transactions, take the write lock first (see the module doc)."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    options = connection.settings_dict.get("OPTIONS") or {}
    if str(options.get("transaction_mode") or "").upper() in ("IMMEDIATE", "EXCLUSIVE"):
        return  # BEGIN IMMEDIATE already did
    if not router.allow_migrate_model(using, ChargeRequest):
        return  # the app's tables live in another database: nothing of ours to touch
    # An UPDATE that matches no row (ids start at 1) still opens SQLite's write transaction.
    ChargeRequest.objects.using(using).filter(pk=0).update(attempts=F("attempts"))
