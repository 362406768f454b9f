"""Bulk sync of charges into the mirror: windows read side by side, one run per account.

A run reads charges oldest first from a lower bound (none for a full sync;
a little before the newest charge the previous run saw, ``OVERLAP``, for an
incremental one). Its creation-time range is split into windows read side
by side (``SYNC_WINDOWS`` readers, see :mod:`.windows` and
:mod:`.read`); each window's place is stored with every page, so a
run that crashes or is killed resumes without re-reading finished windows.
The last window has no upper bound: charges created while the run goes on
are read too, and the next run starts early enough to see any it missed.
Charges changed meanwhile in windows already read are open ones, refreshed
by the next run. A completed run then refreshes the local charges that are
not final yet and that it did not read.

One sync per account at a time (:mod:`.lock`): a second one waits up
to ``wait`` seconds, then raises :class:`SyncInProgressError`.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max, Min, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from ... import conf, observe
from ...client.vocabulary import FINAL_RANK
from ...exceptions import ConfigurationError, NotFoundError, PayChargeError, SyncInProgressError
from ...models import Charge, QuarantinedItem, SyncCheckpoint, SyncWindow
from ...queue import background_task
from ..clients import get_client
from ..mirror import readable_alone, report, retry_quarantined, upsert_charges
from .lock import account_lock, in_progress
from .read import Progress, Reading, SyncResult
from .windows import PAGE_SIZE, Window

__all__ = ["OVERLAP", "PAGE_SIZE", "Progress", "SyncResult", "sync_charges", "sync_windows"]

logger = logging.getLogger("django_paycharge.services")

#: How far before the previous run's newest charge an incremental run starts:
#: charges that become visible late are still picked up.
OVERLAP = timedelta(minutes=10)


@observe.traced("paycharge.sync", lambda account=None, *_, **__: {"account": account or "default"})
def sync_charges(
    account: str | None = None,
    store_id: uuid.UUID | str | None = None,
    *,
    full: bool = False,
    since: datetime | None = None,
    progress: Progress | None = None,
    windows: int | None = None,
    max_pages: int | None = None,
    wait: float = 0.0,
    announce: bool = True,
) -> SyncResult:
    """Bring the mirror of one account's (or one store's) charges up to date.

    Incremental by default; ``full=True`` re-reads everything and ``since``
    starts from a creation time of your choosing. An interrupted run of the
    same kind resumes where each of its windows stopped. ``windows``: how many
    are read side by side (``SYNC_WINDOWS`` by default; on SQLite the most, see
    :mod:`.pace`). ``max_pages`` stops after about that many pages, leaving the
    rest to the next run (``result.complete`` is then False). ``wait``: seconds to wait
    for another sync of the account to finish before raising
    :class:`SyncInProgressError`. ``announce=False``: a first import of history, not
    announced to the shop's receivers (``paycharge_sync --no-announcements``)."""
    name = account or conf.DEFAULT_ACCOUNT
    readers = sync_windows() if windows is None else windows
    if not 1 <= readers <= 64:
        raise ConfigurationError(_("A sync reads between 1 and 64 windows at once."))
    client = get_client(name)
    store = uuid.UUID(str(store_id)) if store_id else None
    with account_lock(name, wait=wait) as held:
        if not held:
            raise in_progress(name, SyncCheckpoint.Resource.CHARGES)
        checkpoint, _created = SyncCheckpoint.objects.get_or_create(
            account=name, store_key=str(store or ""), resource=SyncCheckpoint.Resource.CHARGES
        )
        start = _start_run(checkpoint, full=full, since=since)
        assert checkpoint.run_started_at is not None
        retry_quarantined(name)
        reading = Reading(
            client,
            name,
            store,
            checkpoint.run_started_at,
            SyncResult(),
            checkpoint=checkpoint.pk,
            progress=progress,
            pages_left=max_pages,
            announce=announce,
        )
        return _run(reading, checkpoint, start, readers)


def _run(
    reading: Reading, checkpoint: SyncCheckpoint, start: list[Window], readers: int
) -> SyncResult:
    """Read the run's windows, then refresh the open charges it did not read; count."""
    result = reading.result
    try:
        windows_read = reading.read(start, readers)
        # The refresh is idempotent: cut short by the page budget, the next run does it.
        result.complete = windows_read and _refresh_open(reading, readers)
    except PayChargeError as exc:
        SyncCheckpoint.objects.filter(pk=checkpoint.pk).update(last_error=str(exc)[:2000])
        observe.sync_finished(reading.account, "charges", "failed", result.elapsed, result.seen)
        raise
    if windows_read:
        _finish_run(checkpoint)
    # Every item still kept, whichever run found it, until stored or dismissed.
    result.count_quarantined(report(reading.account, QuarantinedItem.Resource.CHARGE))
    outcome = "complete" if result.complete else "partial"
    observe.sync_finished(reading.account, "charges", outcome, result.elapsed, result.seen)
    return result


def sync_windows() -> int:
    """How many windows a sync reads side by side: ``PAYCHARGE["SYNC_WINDOWS"]``."""
    return conf.get_int_setting("SYNC_WINDOWS", 1, 64)


def _start_run(checkpoint: SyncCheckpoint, *, full: bool, since: datetime | None) -> list[Window]:
    """The windows still to read: an interrupted run's, or a new run's first one."""
    holder = f"{socket.gethostname()} pid {os.getpid()}"
    with transaction.atomic():
        if checkpoint.in_progress and checkpoint.run_full == full and since is None:
            rows = list(checkpoint.windows.filter(done=False))
            logger.info("Resuming the interrupted sync %s: %d windows left", checkpoint, len(rows))
            SyncCheckpoint.objects.filter(pk=checkpoint.pk).update(run_holder=holder)
            return [
                Window(
                    r.start,
                    r.end,
                    cursor=r.cursor,
                    position=r.position,
                    pages=r.pages,
                    rows=r.rows,
                    pk=r.pk,
                )
                for r in rows
            ]
        if full:
            lower = None
        elif since is not None:
            lower = since
        elif checkpoint.high_water is not None:
            lower = checkpoint.high_water - OVERLAP
        else:
            lower = None
        checkpoint.windows.all().delete()
        checkpoint.run_from = lower
        checkpoint.run_full = full
        checkpoint.run_started_at = timezone.now()
        checkpoint.run_holder = holder
        checkpoint.save(update_fields=["run_from", "run_full", "run_started_at", "run_holder"])
        first = SyncWindow.objects.create(checkpoint=checkpoint, start=lower)
    return [Window(lower, None, pk=first.pk)]


def _finish_run(checkpoint: SyncCheckpoint) -> None:
    with transaction.atomic():
        newest = checkpoint.windows.aggregate(newest=Max("position"))["newest"]
        high_water = max(filter(None, (checkpoint.high_water, newest)), default=None)
        checkpoint.windows.all().delete()
        SyncCheckpoint.objects.filter(pk=checkpoint.pk).update(
            high_water=high_water,
            run_from=None,
            run_full=False,
            run_started_at=None,
            run_holder="",
            last_completed_at=timezone.now(),
            last_error="",
        )


def _open_charges(account: str, store: uuid.UUID | None, before: datetime) -> QuerySet[Charge]:
    query = Charge.objects.filter(account=account, status_rank__lt=FINAL_RANK, synced_at__lt=before)
    return query.filter(store_id=store) if store else query


def _refresh_open(reading: Reading, readers: int) -> bool:
    """Refresh charges not final yet that this run did not read: by list or one by one.

    Re-listing from the oldest open charge costs one request per 100 charges
    (read in windows, like the run, without a checkpoint: it is idempotent);
    reading them one by one costs one request each. Take the cheaper. Either
    counts against what is left of the run's page budget; returns False when
    it ran out first.
    """
    account, store, result = reading.account, reading.store, reading.result
    open_charges = _open_charges(account, store, reading.until)
    count = open_charges.count()
    if not count:
        return True
    # None when no open charge's creation time is known: those are read one by one.
    oldest = open_charges.aggregate(oldest=Min("created_on"))["oldest"]
    span = Charge.objects.filter(account=account, created_on__gte=oldest or timezone.now())
    if store:
        span = span.filter(store_id=store)
    budget = reading.pages_left
    if oldest is not None and math.ceil(span.count() / PAGE_SIZE) <= count:
        windows = result.windows, result.windows_done  # the run's, not the refresh's
        again = Reading(
            reading.client,
            account,
            store,
            reading.until,
            result,
            pages_left=budget,
            announce=reading.announce,
        )
        done = again.read([Window(oldest, None)], readers)
        result.windows, result.windows_done = windows
        return done
    done = _refresh_one_by_one(reading, open_charges, budget)
    if reading.progress:
        reading.progress(result)
    return done


def _refresh_one_by_one(
    reading: Reading, open_charges: QuerySet[Charge], budget: int | None
) -> bool:
    client, account, result = reading.client, reading.account, reading.result
    alone = readable_alone(open_charges).only("gateway_id", "store_id")
    for n, charge in enumerate(alone.iterator(chunk_size=PAGE_SIZE)):
        if budget is not None and n >= budget:
            return False
        try:
            assert charge.store_id is not None  # filtered by readable_alone
            remote = client.charges.retrieve(charge.store_id, charge.gateway_id)
        except NotFoundError:
            result.failed += 1
            logger.warning("Charge %s is no longer on the gateway", charge.gateway_id)
            continue
        upserted = upsert_charges([remote], account=account, announce=reading.announce)
        result.add_page(1, upserted)
    return True


@background_task
def sync_charges_task(account: str | None = None) -> dict[str, Any]:
    """Run an incremental sync of one account's charges; returns its counts."""
    try:
        return sync_charges(account).as_dict()
    except SyncInProgressError as exc:
        # The sync already running does this task's work: nothing failed.
        logging.getLogger("django_paycharge.tasks").info(
            "Sync of account %s skipped: %s", account or conf.DEFAULT_ACCOUNT, exc
        )
        return {"skipped": str(exc)}
