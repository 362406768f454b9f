"""One sync per account at a time: a lock the operating system frees when its holder dies.

PostgreSQL: a session advisory lock, held by a connection of its own (not the
caller's, whose transaction may roll back or be reused): closing it, or the
process dying, frees the lock at once. Behind a pooler in transaction mode
(PgBouncer) session locks do not hold: give the sync a direct connection.

SQLite: an exclusive transaction on a lock file beside the database (one per
account), held by a ``sqlite3`` connection of its own. SQLite's file locks
are released by the operating system when the process dies, and SQLite
also keeps two connections of one process apart. An in-memory database,
which no other process can open, takes a lock of this process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.utils.translation import gettext as _

from ...exceptions import SyncInProgressError
from ...models import SyncCheckpoint
from ..mirror import statements

#: How often a waiting sync tries the lock again, in seconds.
POLL = 0.2

_KEY = "django_paycharge.sync:"
_local_locks: dict[tuple[str, str], threading.Lock] = {}
_local_guard = threading.Lock()


@contextmanager
def account_lock(
    account: str, *, wait: float = 0.0, using: str = DEFAULT_DB_ALIAS
) -> Iterator[bool]:
    """Hold the sync lock of ``account`` inside the block.

    Yields True when the lock was taken, or False when it was still held by
    another sync after ``wait`` seconds (then nothing is held).
    """
    statements(connections[using])  # PostgreSQL or SQLite, or a ConfigurationError
    if connections[using].vendor == "postgresql":
        holder: _Lock = _AdvisoryLock(account, using)
    else:
        holder = _sqlite_lock(account, using)
    deadline = time.monotonic() + max(0.0, wait)
    try:
        while not holder.try_acquire():
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))
        yield True
    finally:
        holder.close()


class _Lock:
    def try_acquire(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _AdvisoryLock(_Lock):
    def __init__(self, account: str, using: str) -> None:
        # A connection of the lock's own: the lock lives and dies with it.
        self.conn = connections.create_connection(using)
        self.key = _KEY + account

    def try_acquire(self) -> bool:
        with self.conn.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [self.key])
            (taken,) = cursor.fetchone()
        return bool(taken)

    def close(self) -> None:
        # Unlocked first: closing alone frees the lock only once the server has ended the
        # session, and the next sync of this process may ask for it before that.
        try:
            with self.conn.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock_all()")
        except DatabaseError:
            pass  # a broken session: closing it frees the lock
        finally:
            self.conn.close()


def _sqlite_lock(account: str, using: str) -> _Lock:
    name = str(connections[using].settings_dict["NAME"])
    if name in ("", ":memory:") or "mode=memory" in name:
        return _LocalLock(account, name)
    digest = hashlib.blake2b(account.encode(), digest_size=6).hexdigest()
    return _FileLock(Path(f"{name}-paycharge-sync-{digest}.lock"))


class _FileLock(_Lock):
    def __init__(self, path: Path) -> None:
        import sqlite3  # here: a Python built without it still serves PostgreSQL

        # No busy time-out: a held lock answers "locked" at once, and waiting is ours to do.
        self.db: Any = sqlite3.connect(path, timeout=0, isolation_level=None)
        self.error = sqlite3.OperationalError

    def try_acquire(self) -> bool:
        try:
            self.db.execute("BEGIN EXCLUSIVE")
        except self.error:
            return False
        return True

    def close(self) -> None:
        self.db.close()  # rolls the transaction back: the file is unlocked


class _LocalLock(_Lock):
    def __init__(self, account: str, name: str) -> None:
        with _local_guard:
            self.lock = _local_locks.setdefault((name, account), threading.Lock())
        self.held = False

    def try_acquire(self) -> bool:
        self.held = self.lock.acquire(blocking=False)
        return self.held

    def close(self) -> None:
        if self.held:
            self.lock.release()


def in_progress(account: str, resource: str | None = None) -> SyncInProgressError:
    """The error for a run refused while another holds the account's lock, naming the
    holder where ``resource``'s checkpoint records it (a subscription sync keeps none)."""
    running = (
        resource
        and SyncCheckpoint.objects.filter(
            account=account, resource=resource, run_holder__gt=""
        ).first()
    )
    holder = ""
    if running and running.run_started_at is not None:
        holder = _("%(holder)s, since %(since)s") % {
            "holder": running.run_holder,
            "since": running.run_started_at.isoformat(timespec="seconds"),
        }
    message = _(
        "Another sync of account %(account)s is running%(where)s; try again when it has finished."
    ) % {
        "account": account,
        "where": f" ({holder})" if holder else "",
    }
    return SyncInProgressError(message, holder=holder)
