"""Bulk sync of charges and webhook configurations into the mirror.

Charges are read oldest first (``cursor_direction=asc``) from a lower bound:
each page is upserted in one transaction and the checkpoint is moved past it,
so a crash resumes after the last stored page. An incremental run starts a
little before the newest charge the previous run saw (``OVERLAP``), then
refreshes the local charges that are not final yet.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Min, QuerySet
from django.utils import timezone

from .. import conf
from ..client import Charge as RemoteCharge
from ..client import Page, PayChargeClient
from ..exceptions import NotFoundError, PayChargeError
from ..models import Charge, SyncCheckpoint
from .clients import get_client
from .quarantine import quarantine, readable_alone, retry_quarantined, unresolved
from .upsert import PreparedCharges, UpsertResult, prepare_charges, upsert_charges, upsert_prepared

logger = logging.getLogger("django_paycharge.services")

PAGE_SIZE = 100
#: How far before the previous run's newest charge an incremental run starts:
#: charges that become visible late are still picked up.
OVERLAP = timedelta(minutes=10)
_FINAL_RANK = 3


@dataclass
class SyncResult:
    """Counts of one sync run; passed to the progress callback after every page."""

    pages: int = 0
    seen: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0
    failed: int = 0
    removed: int = 0
    #: Items that cannot be stored (no usable id) and are still quarantined after the run.
    quarantined: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.seen / self.elapsed if self.elapsed > 0 else 0.0

    def add_page(self, size: int, upserted: UpsertResult) -> None:
        self.pages += 1
        self.seen += size
        self.created += upserted.created
        self.updated += upserted.updated
        self.unchanged += upserted.unchanged
        self.stale += upserted.stale

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
        )
        return {k: getattr(self, k) for k in keys}


Progress = Callable[[SyncResult], None]


def sync_charges(
    account: str | None = None,
    store_id: uuid.UUID | str | None = None,
    *,
    full: bool = False,
    since: datetime | None = None,
    progress: Progress | None = None,
) -> SyncResult:
    """Bring the mirror of one account's (or one store's) charges up to date.

    Incremental by default; ``full=True`` re-reads everything and ``since``
    starts from a creation time of your choosing. An interrupted run of the
    same kind resumes from its last stored page.
    """
    name = account or conf.DEFAULT_ACCOUNT
    client = get_client(name)
    store = uuid.UUID(str(store_id)) if store_id else None
    checkpoint, _ = SyncCheckpoint.objects.get_or_create(
        account=name, store_key=str(store or ""), resource=SyncCheckpoint.Resource.CHARGES
    )
    lower, cursor = _start_run(checkpoint, full=full, since=since)
    result = SyncResult()
    started_at = checkpoint.run_started_at
    assert started_at is not None
    retry_quarantined(name)
    try:
        high_water = _read_pages(
            client,
            name,
            store,
            lower,
            cursor,
            result,
            progress,
            checkpoint_pk=checkpoint.pk,
            high_water=checkpoint.high_water,
        )
        _refresh_open(client, name, store, started_at, result, progress)
    except PayChargeError as exc:
        SyncCheckpoint.objects.filter(pk=checkpoint.pk).update(last_error=str(exc)[:2000])
        raise
    result.quarantined = unresolved(name).count()
    SyncCheckpoint.objects.filter(pk=checkpoint.pk).update(
        high_water=high_water,
        run_from=None,
        run_cursor="",
        run_full=False,
        run_started_at=None,
        last_completed_at=timezone.now(),
        last_error="",
    )
    return result


def _start_run(
    checkpoint: SyncCheckpoint, *, full: bool, since: datetime | None
) -> tuple[datetime | None, str | None]:
    if checkpoint.in_progress and checkpoint.run_full == full and since is None:
        logger.info("Resuming the interrupted sync %s after %s", checkpoint, checkpoint.run_cursor)
        return checkpoint.run_from, checkpoint.run_cursor or None
    if full:
        lower = None
    elif since is not None:
        lower = since
    elif checkpoint.high_water is not None:
        lower = checkpoint.high_water - OVERLAP
    else:
        lower = None
    checkpoint.run_from = lower
    checkpoint.run_cursor = ""
    checkpoint.run_full = full
    checkpoint.run_started_at = timezone.now()
    checkpoint.save(update_fields=["run_from", "run_cursor", "run_full", "run_started_at"])
    return lower, None


def _read_pages(
    client: PayChargeClient,
    account: str,
    store: uuid.UUID | None,
    lower: datetime | None,
    cursor: str | None,
    result: SyncResult,
    progress: Progress | None,
    *,
    checkpoint_pk: int | None = None,
    high_water: datetime | None = None,
) -> datetime | None:
    """Read and store pages oldest first; returns the newest creation time seen.

    The next page is requested and made ready to write (parsed, rows built and
    encoded: see :func:`prepare_charges`) in a helper thread while the current
    one is written, so the gateway's answer time, our CPU work and the
    database's overlap. Pages are still stored, and the checkpoint moved,
    strictly in order.
    """
    filters: dict[str, Any] = {"from_": lower} if lower is not None else {}
    # Encode rows in advance while the last page written had rows to write; an
    # incremental run that mostly confirms unchanged charges encodes only what it writes.
    writing = True

    def fetch(after: str | None) -> tuple[Page[RemoteCharge], PreparedCharges]:
        page = client.charges.list_page(
            store_id=store, limit=PAGE_SIZE, cursor=after, cursor_direction="asc", **filters
        )
        return page, prepare_charges(page.items, account=account, encode=writing, share_gil=True)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="paycharge-sync") as pool:
        page, prepared = fetch(cursor)
        while True:
            ahead: Future[tuple[Page[RemoteCharge], PreparedCharges]] | None = None
            if page.items and page.has_more:
                ahead = pool.submit(fetch, str(page.items[-1].id))
            quarantine(account, page.rejected)
            try:
                written = result.created + result.updated
                high_water = _store_page(
                    page, prepared, result, progress, checkpoint_pk, high_water
                )
                writing = result.created + result.updated > written
            except BaseException:
                if ahead is not None:
                    ahead.cancel()
                raise
            if ahead is None:
                return high_water
            page, prepared = ahead.result()


def _store_page(
    page: Page[RemoteCharge],
    prepared: PreparedCharges,
    result: SyncResult,
    progress: Progress | None,
    checkpoint_pk: int | None,
    high_water: datetime | None,
) -> datetime | None:
    if not page.items:
        return high_water
    upserted = upsert_prepared(prepared)
    result.add_page(len(page.items), upserted)
    newest = max((c.created_on for c in page.items if c.created_on), default=None)
    if newest is not None and (high_water is None or newest > high_water):
        high_water = newest
    if checkpoint_pk is not None:
        SyncCheckpoint.objects.filter(pk=checkpoint_pk).update(
            run_cursor=str(page.items[-1].id), updated_at=timezone.now()
        )
    if progress:
        progress(result)
    return high_water


def _open_charges(account: str, store: uuid.UUID | None, before: datetime) -> QuerySet[Charge]:
    query = Charge.objects.filter(
        account=account, status_rank__lt=_FINAL_RANK, synced_at__lt=before
    )
    return query.filter(store_id=store) if store else query


def _refresh_open(
    client: PayChargeClient,
    account: str,
    store: uuid.UUID | None,
    started_at: datetime,
    result: SyncResult,
    progress: Progress | None,
) -> None:
    """Refresh charges not final yet that this run did not read: by list or one by one.

    Re-listing from the oldest open charge costs one request per 100 charges;
    reading them one by one costs one request each. Take the cheaper.
    """
    open_charges = _open_charges(account, store, started_at)
    count = open_charges.count()
    if not count:
        return
    # None when no open charge's creation time is known: those are read one by one.
    oldest = open_charges.aggregate(oldest=Min("created_on"))["oldest"]
    span = Charge.objects.filter(account=account, created_on__gte=oldest or timezone.now())
    if store:
        span = span.filter(store_id=store)
    if oldest is not None and math.ceil(span.count() / PAGE_SIZE) <= count:
        # Idempotent and bounded: no resume point needed.
        _read_pages(client, account, store, oldest, None, result, progress)
        return
    alone = readable_alone(open_charges).only("gateway_id", "store_id")
    for charge in alone.iterator(chunk_size=PAGE_SIZE):
        try:
            assert charge.store_id is not None  # filtered by readable_alone
            remote = client.charges.retrieve(charge.store_id, charge.gateway_id)
        except NotFoundError:
            result.failed += 1
            logger.warning("Charge %s is no longer on the gateway", charge.gateway_id)
            continue
        result.add_page(1, upsert_charges([remote], account=account))
    if progress:
        progress(result)
