"""The readers of a sync run: each takes a window, reads its pages and stores them.

Readers are threads, each with its own database connection, so one
reader's Python work (typing, row building, encoding) overlaps another's
wait for the gateway or the database. Each reader's page requests are made
by a thread of their own (a ``Prefetcher``) that keeps the window's next
page in flight. A page and its window's checkpoint commit in one
transaction. On SQLite, which takes one writer at a time, the readers take
turns to store a page, while their requests still go side by side. Inside
a transaction of the caller (a test, or code that calls the sync inside
``atomic``), the caller's thread is the only reader, so the pages join that
transaction.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field

from ... import observe
from ...client import Charge as RemoteCharge
from ...client import PayChargeClient, Prefetcher, RawPage
from ...models import SyncWindow
from ..mirror import Report, UpsertResult, WriteCounts, prepare_page, quarantine
from ..mirror import upsert_prepared as upsert_prepared  # tests stand in a write here
from .pace import Pace
from .windows import PAGE_SIZE, Schedule, Window

logger = logging.getLogger("django_paycharge.services")


@dataclass
class SyncResult(WriteCounts):
    """Counts of one sync run; passed to the progress callback after every page.

    ``windows`` and ``windows_done``: creation-time windows of the run so far,
    and those read to their end. ``complete`` is False when the run stopped
    early on purpose (a page budget) and the next sync goes on from there.
    """

    pages: int = 0
    seen: int = 0
    failed: int = 0
    removed: int = 0
    #: Items that cannot be stored (no usable id) and are still quarantined after the run;
    #: of them, those never reported yet (``paycharge_sync`` reports them), and those the
    #: next run tries again.
    quarantined: int = 0
    quarantined_new: int = 0
    quarantined_retriable: int = 0
    windows: int = 0
    windows_done: int = 0
    complete: bool = True
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.seen / self.elapsed if self.elapsed > 0 else 0.0

    def count_quarantined(self, report: Report) -> None:
        """What :func:`.quarantine.report` said at the end of the run."""
        self.quarantined = report.kept
        self.quarantined_new = report.new
        self.quarantined_retriable = report.retriable

    def add_page(self, size: int, upserted: UpsertResult) -> None:
        self.pages += 1
        self.seen += size
        self.add(upserted)

    def as_dict(self) -> dict[str, Any]:
        keys = (
            "pages",
            "seen",
            "created",
            "updated",
            "unchanged",
            "stale",
            "failed",
            "removed",
            "quarantined",
            "quarantined_new",
            "quarantined_retriable",
        )
        return {k: getattr(self, k) for k in keys} | {
            "windows": self.windows,
            "complete": self.complete,
        }


Progress = Callable[[SyncResult], None]


@dataclass(eq=False)
class Reading:
    """What the readers of one run share. ``checkpoint``: the SyncCheckpoint's pk, or
    None to keep no checkpoint; ``pages_left``: a page budget, or None; ``announce``:
    whether the pages' changes are announced to the shop's receivers."""

    client: PayChargeClient
    account: str
    store: uuid.UUID | None
    until: datetime
    result: SyncResult
    checkpoint: int | None = None
    progress: Progress | None = None
    pages_left: int | None = None
    alias: str = DEFAULT_DB_ALIAS
    announce: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _errors: list[BaseException] = field(default_factory=list)

    def read(self, windows: list[Window], readers: int) -> bool:
        """Read ``windows`` (and those split off them) with ``readers`` threads.

        Returns False when the page budget ran out first. Raises the first
        error of any reader, after every reader has stopped.
        """
        if not transaction.get_autocommit(using=self.alias):
            readers = 1  # inside the caller's transaction: its thread, its connection
        # SQLite writes one page at a time: its readers take turns to store a page (type,
        # build, write). Taking turns only for the write would let the writer hold
        # SQLite's lock while it waits for the GIL behind the other readers' Python
        # after every statement, which makes each page slower (``bench/run sync``,
        # docs/benchmarks.md). Its pace then says how many windows keep that writer busy.
        turns: AbstractContextManager[Any] = nullcontext()
        pace = None
        if readers > 1 and connections[self.alias].vendor == "sqlite":
            turns, pace = threading.Lock(), Pace(readers)
        # A paced run starts with one window, and adds more once a page is fetched and stored.
        schedule = Schedule(windows, limit=readers if pace is None else 1)
        threads = [
            threading.Thread(
                target=observe.carry(self._reader),
                args=(schedule, turns, pace, True),
                name=f"paycharge-sync-{n}",
            )
            for n in range(1, readers)
        ]
        for thread in threads:
            thread.start()
        self._reader(schedule, turns, pace, False)
        for thread in threads:
            thread.join()
        self.result.windows, self.result.windows_done = schedule.total, schedule.finished
        if self._errors:
            raise self._errors[0]
        return not schedule.stopped

    def _reader(self, schedule: Schedule, turns: Any, pace: Pace | None, own_thread: bool) -> None:
        try:
            while (window := schedule.take()) is not None:
                finished = False
                try:
                    finished = self._read_window(window, schedule, turns, pace)
                finally:
                    schedule.done(finished=finished)
        except BaseException as exc:  # raised in the caller's thread by read()
            with self._lock:
                self._errors.append(exc)
            schedule.stop()
        finally:
            if own_thread:
                connections.close_all()  # this thread's connections only

    @observe.traced("paycharge.sync.window", lambda self, *_: {"account": self.account})
    def _read_window(
        self, window: Window, schedule: Schedule, turns: Any, pace: Pace | None
    ) -> bool:
        def fetch(cursor: str | None) -> RawPage[RemoteCharge]:
            started = time.monotonic()
            page = self.client.charges.fetch_page(
                store_id=self.store,
                limit=PAGE_SIZE,
                cursor=cursor,
                cursor_direction="asc",
                **window.filters(),  # read at each request: a split moves the end
            )
            if pace is not None:
                pace.requested(time.monotonic() - started)
            return page

        def follow(page: RawPage[RemoteCharge]) -> str | None:
            if not page.has_more or not page.items or window.passed(_created(page.items[-1])):
                return None
            return page.cursor

        pages = Prefetcher(fetch, follow, window.cursor or None, name="paycharge-sync-pages")
        try:
            for raw, last in pages:
                if schedule.stopped:
                    return False
                with turns:
                    self._store(window, raw, last, schedule, pace)
                spent = self._spend_page()
                if last:
                    return True
                if spent:
                    schedule.stop()
                    return False
            return True
        finally:
            pages.close(timeout=0)  # a request still in flight ends on its own

    def _store(
        self,
        window: Window,
        raw: RawPage[RemoteCharge],
        last: bool,
        schedule: Schedule,
        pace: Pace | None,
    ) -> None:
        """Store a page and move its window's checkpoint; then split the window's rest
        for idle readers (after the write, so that the pace knows this page's cost)."""
        started = time.monotonic()
        failed: list[Any] = []

        def set_aside(item: Any, error: Exception) -> None:
            failed.append(item)
            self._set_aside(item, error)

        prepared, rejected = prepare_page(
            raw.items, account=self.account, keep=window.owns, using=self.alias, on_error=set_aside
        )
        quarantine(self.account, rejected)  # items without a usable id: kept, not lost
        owned = len(prepared.rows) + len(failed)
        times = [r["created_on"] for r in prepared.rows.values() if r["created_on"] is not None]
        window.saw(times[0] if times else None, owned)
        position = max(times, default=window.position)
        window.position = position
        cursor = raw.cursor or window.cursor

        def move_checkpoint() -> None:
            if window.pk is not None:
                _move_window(self.alias, window.pk, cursor, position, owned, last)

        upserted = upsert_prepared(
            prepared, also=move_checkpoint, announce=self.announce, background=True
        )
        window.cursor = cursor
        if pace is not None:
            pace.stored(time.monotonic() - started)
            schedule.set_limit(pace.windows())
        if not last:
            self._split(window, schedule)
        with self._lock:
            self.result.add_page(owned, upserted)
            self.result.windows, self.result.windows_done = schedule.total, schedule.finished
            if self.progress is not None:
                self.progress(self.result)

    def _split(self, window: Window, schedule: Schedule) -> None:
        """Give the rest of ``window``'s range to new windows, when readers are idle.

        The split commits at once, so idle readers start on the new windows;
        the window's own requests from now on ask up to its new end (see
        _read_window).
        """
        points = window.split_points(self.until, schedule.idle())
        if not points:
            return
        ends = [*points[1:], window.end]
        new = [Window(start, end) for start, end in zip(points, ends, strict=True)]
        if window.pk is not None and self.checkpoint is not None:
            with transaction.atomic(using=self.alias):
                windows = SyncWindow.objects.using(self.alias)
                windows.filter(pk=window.pk).update(end=points[0])
                for piece in new:
                    piece.pk = windows.create(
                        checkpoint_id=self.checkpoint, start=piece.start, end=piece.end
                    ).pk
        window.end = points[0]
        schedule.add(new)

    def _set_aside(self, item: Any, error: Exception) -> None:
        # One charge that cannot become a row must not sink its page.
        logger.error("Charge %s could not be stored and was skipped: %r", item.get("id"), error)
        with self._lock:
            self.result.failed += 1

    def _spend_page(self) -> bool:
        """Count a page against the budget; True when it is spent."""
        with self._lock:
            if self.pages_left is None:
                return False
            self.pages_left -= 1
            return self.pages_left <= 0


def _move_window(
    alias: str, pk: int, cursor: str, position: datetime | None, rows: int, done: bool
) -> None:
    """Move a window's checkpoint past a page of ``rows`` charges, in the page's transaction.

    Written out rather than through ``QuerySet.update()``, which compiled the
    same update on every page: the sync from a nearby gateway into SQLite ran
    faster without it (docs/benchmarks.md, "How many windows: SQLite's pace").
    """
    conn = connections[alias]
    statement, position_field = _move_statement(alias, conn)
    at = position_field.get_db_prep_save(position, conn)
    with conn.cursor() as db:
        db.execute(statement, [cursor, at, rows, done, pk])


_move_statements: dict[tuple[str, str], tuple[str, Field[Any, Any]]] = {}


def _move_statement(alias: str, conn: BaseDatabaseWrapper) -> tuple[str, Field[Any, Any]]:
    """The checkpoint's UPDATE on ``alias`` (built once), and the field of its position."""
    key = (alias, conn.vendor)
    if key not in _move_statements:
        meta = SyncWindow._meta
        fields = {f.name: f for f in meta.concrete_fields}
        table, cursor_, position_, pages, rows_, done_, id_ = (
            conn.ops.quote_name(name)
            for name in (
                meta.db_table,
                *(str(fields[n].column) for n in ("cursor", "position", "pages", "rows", "done")),
                str(meta.pk.column),
            )
        )
        _move_statements[key] = (
            f"UPDATE {table} SET {cursor_} = %s, {position_} = %s, "  # noqa: S608 - names only
            f"{pages} = {pages} + 1, {rows_} = {rows_} + %s, {done_} = %s WHERE {id_} = %s",
            fields["position"],
        )
    return _move_statements[key]


def _created(item: Any) -> datetime | None:
    """The creation time of a list item's JSON, when it has a readable one."""
    value = item.get("created_on") if type(item) is dict else None
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
