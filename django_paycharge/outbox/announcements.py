"""Announcements, at least once to the end: each receiver runs until it returns.

:func:`django_paycharge.outbox.send` comes here. Inside the transaction that
makes the change, one :class:`~django_paycharge.models.Announcement` row is
written per receiver connected then, all with one event id, each already
claimed with a lease (:mod:`.leases`) by the process that made the change.
After the commit that process runs the receivers. One that returns is
marked heard; one that raises keeps its claim until a back-off runs out
(never later than the lease for the first retry), and one whose process
dies keeps it until the lease runs out. Either way whoever takes over
stuck rows runs that receiver again, and only that one: a deferred
``hear_announcement`` task, the ``sweep_announcement_leases`` task on
django-tasks-db (both defined and sent here), ``paycharge_periodic``.
After :attr:`Announcement.LEASE_ATTEMPTS` runs it is left "not heard",
shown in the admin with its error, and counted by ``paycharge_periodic``.

A receiver is known by its dotted name. Rows are written for the receivers
connected when the change is made: a receiver connected later does not get
the changes made before, and one no longer connected when its row runs again
fails that run (so a receiver connected only in the web process, not in the
workers, is seen, not silently skipped); staff dismiss its rows in the admin.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.apps import apps
from django.db import router, transaction
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import gettext

from .. import conf, signals
from ..client.backoff import Backoff
from ..models import Announcement
from ..models.loaded import loaded
from ..queue import background_enabled, background_task, ensure_run_after, on_database, routed
from . import leases
from .receivers import Receivers, decode_all, encode, receivers_of
from .writes import insert_rows

logger = logging.getLogger("django_paycharge.signals")

Status = Announcement.Status
#: A failed receiver's back-off (full jitter: receivers that failed together, say
#: while a service they call was down, do not come back together); the first
#: retry also comes no later than the lease.
RETRY_BASE = 10.0
RETRY_CAP = 3600.0
RETRY_BACKOFF = Backoff(RETRY_BASE, RETRY_CAP)


#: One change to announce: the signal's name, the signal, its sender, its arguments.
Change = tuple[str, Signal, Any, Mapping[str, Any]]
#: A row's receiver (None: not connected here) and what it is called with.
Hearing = tuple[Callable[..., Any] | None, Mapping[str, Any]]


def announce(
    name: str, signal: Signal, *, sender: Any, using: str, kwargs: Mapping[str, Any]
) -> uuid.UUID | None:
    """Record ``signal`` for each receiver in the current transaction on ``using``; run it after.

    Returns the event id (None when no receiver is connected: nothing to hear).
    """
    [event_id] = announce_all([(name, signal, sender, kwargs)], using=using)
    return event_id


def announce_all(
    changes: Iterable[Change], *, using: str, background: bool = False
) -> list[uuid.UUID | None]:
    """Record ``changes`` for each of their receivers in one statement; hear them after.

    In the current transaction on ``using``. After its commit the receivers
    run in the order of ``changes``: with ``background``, handed to one task
    of the task backend when work goes there (the rows wait, unclaimed, for
    it or the sweep); otherwise run by this process (the rows are claimed by
    it already). Returns each change's event id (None: no receiver).
    """
    background = background and background_enabled()
    now = timezone.now()
    claim = None if background else (leases.claimant("announced"), now + conf.webhook_lease())
    rows: list[Announcement] = []
    hearing: list[Hearing] = []
    ids: list[uuid.UUID | None] = []
    found: dict[tuple[int, int], tuple[Receivers, dict[str, Any]]] = {}
    changes = list(changes)
    new_ids = _event_ids(len(changes))
    for name, signal, sender, kwargs in changes:
        known = found.get((id(signal), id(sender)))
        if known is None:
            known = found[id(signal), id(sender)] = (
                receivers_of(signal, sender),
                _template(sender, now, claim),
            )
        receivers, template = known
        event_id = next(new_ids) if receivers else None
        ids.append(event_id)
        if event_id is None:
            continue
        arguments = encode(kwargs)
        live = {"signal": signal, "sender": sender, "event_id": event_id, **kwargs}
        for receiver_name, receiver in receivers:
            values = template.copy()
            values["event_id"], values["signal"] = event_id, name
            values["receiver"], values["arguments"] = receiver_name, arguments
            rows.append(loaded(Announcement, values))
            hearing.append((receiver, live))
    if rows:
        rows = insert_rows(rows, using)
        transaction.on_commit(partial(_after_commit, rows, hearing, background), using=using)
    return ids


def _event_ids(count: int) -> Iterator[uuid.UUID]:
    """``count`` random (version 4) event ids from one read of the system's randomness
    (``uuid4()`` reads it once an id: a sync's page spent more on that than on its rows)."""
    randomness = os.urandom(16 * count)
    for start in range(0, 16 * count, 16):
        yield uuid.UUID(bytes=randomness[start : start + 16], version=4)


_FIELDS = Announcement._meta.concrete_fields


def _template(sender: Any, now: datetime, claim: tuple[str, datetime] | None) -> dict[str, Any]:
    """The values, by attribute, that a batch's new rows of ``sender`` share: claimed by
    this process (``claim``: by whom, until when) or waiting; a row's own go in after."""
    values = {f.attname: None if f.primary_key else f.get_default() for f in _FIELDS}
    values["sender"] = sender._meta.label_lower
    values["created_at"] = now
    if claim is not None:
        values["status"], values["attempts"] = Status.PROCESSING, 1
        values["claimed_at"] = now
        values["claimed_by"], values["lease_until"] = claim
    return values


def _after_commit(rows: list[Announcement], hearing: list[Hearing], background: bool) -> None:
    _watch(rows[0].lease_until or timezone.now() + conf.webhook_lease())
    if not background:
        hear_rows(rows, hearing)
        return
    try:
        routed(hear_announcements).enqueue([row.pk for row in rows])
    except Exception:  # the rows wait: the sweep or paycharge_periodic runs them
        logger.exception("Could not hand %d announcements to the task backend", len(rows))


def _watch(lease_until: datetime) -> None:
    # Only where it is one query: a receiver's process that dies on django-tasks-db
    # is then run again by the lease sweep, cron or not (as for deliveries).
    try:
        if on_database(sweep_announcement_leases):
            ensure_run_after(sweep_announcement_leases, lease_until)
    except Exception:  # the periodic sweep takes over stuck rows anyway
        logger.exception("Could not schedule the sweep of announcements")


def hear_rows(rows: list[Announcement], hearing: list[Hearing]) -> Counter[str]:
    """Run the receivers of rows of one claim, in order, their leases renewed meanwhile; those
    that returned are marked heard together (one statement). Counts by status after."""
    counts: Counter[str] = Counter()
    if not rows:
        return counts
    claimed_at = rows[0].claimed_at
    assert claimed_at is not None
    heard: list[int] = []
    with leases.Heartbeat(Announcement, [row.pk for row in rows], claimed_at):
        try:
            for row, (receiver, calls) in zip(rows, hearing, strict=True):
                status = _attempt(row, receiver, calls)
                counts[status] += 1
                if status == Status.PROCESSED:
                    heard.append(row.pk)
        finally:
            _mark_heard(heard, claimed_at, rows[0]._state.db or router.db_for_write(Announcement))
    return counts


def _mark_heard(pks: list[int], claimed_at: datetime, using: str) -> None:
    try:
        leases.finish_many(
            Announcement,
            pks,
            claimed_at,
            using=using,
            status=Status.PROCESSED,
            processed_at=timezone.now(),
            last_error="",
        )
    except Exception:  # heard; the rows say so once their lease runs out and they run again
        logger.exception("%d announcements heard, but could not be marked so", len(pks))


def run(row: Announcement, receiver: Callable[..., Any] | None, calls: Mapping[str, Any]) -> str:
    """Run one claimed row's receiver with ``calls``, its lease renewed meanwhile; record the
    outcome; the status after."""
    assert row.claimed_at is not None
    with leases.Heartbeat(Announcement, [row.pk], row.claimed_at):
        status = _attempt(row, receiver, calls)
    if status != Status.PROCESSED:
        return status
    try:
        leases.finish(row, status=Status.PROCESSED, processed_at=timezone.now(), last_error="")
    except Exception:  # heard; the row says so once the lease runs out and it runs again
        logger.exception("Announcement %s heard, but could not be marked so", row.pk)
    return str(Status.PROCESSED)


def _attempt(
    row: Announcement, receiver: Callable[..., Any] | None, calls: Mapping[str, Any]
) -> str:
    """Run the receiver: ``heard`` when it returned (not recorded yet), else its failure
    recorded and the status after."""
    try:
        if receiver is None:
            raise LookupError(
                gettext(
                    "Receiver %(name)s is not connected in this process: connect it where "
                    "every process loads it (AppConfig.ready), or dismiss this announcement."
                )
                % {"name": row.receiver}
            )
        receiver(**calls)
    except Exception as exc:
        logger.error(
            "Receiver %s of %s failed (%s) for event %s, attempt %d",
            row.receiver,
            row.signal,
            type(exc).__name__,
            row.event_id,
            row.attempts,
            exc_info=True,
        )
        return _failed(row, exc)
    except BaseException:  # shutting down: give the claim back, the next sweep runs it
        leases.release(row)
        raise
    return str(Status.PROCESSED)


def _failed(row: Announcement, exc: Exception) -> str:
    error = f"{type(exc).__name__}: {exc}"[:2000]
    now = timezone.now()
    try:
        if row.attempts >= Announcement.LEASE_ATTEMPTS:
            leases.finish(row, status=Status.FAILED, processed_at=now, last_error=error)
            logger.error(
                "Receiver %s of %s was not heard after %d attempts (event %s): retry it "
                "from the admin once the cause is fixed",
                row.receiver,
                row.signal,
                row.attempts,
                row.event_id,
            )
            return str(Status.FAILED)
        due = now + backoff(row.attempts)
        leases.hold(row, due, last_error=error, claimed_by="")  # no process holds it: a back-off
    except Exception:  # the claim's lease still runs out: the row is run again then
        logger.exception("Announcement %s: its failure could not be recorded", row.pk)
        return str(Status.PROCESSING)
    try:
        schedule(row.pk, due)
    except Exception:  # the periodic sweep takes it instead
        logger.exception("Could not schedule the next run of announcement %s", row.pk)
    return str(Status.PROCESSING)


def backoff(attempts: int) -> timedelta:
    """How long to wait after the ``attempts``-th failed run; the first retry within the lease."""
    delay = RETRY_BACKOFF.delay(attempts - 1)
    if attempts <= 1:
        delay = min(delay, conf.webhook_lease().total_seconds())
    return timedelta(seconds=delay)


def hear(pk: int, *, by: str, force: bool = False) -> str:
    """Claim one row and run its receiver again; its status after (``"busy"`` if claimed)."""
    row = leases.claim(pk, by=by, force=force, model=Announcement)
    if row is None:
        found = Announcement.objects.filter(pk=pk).values_list("status", flat=True).first()
        return "busy" if found == Status.PROCESSING else str(found or "missing")
    return hear_claimed(row)


def hear_claimed(row: Announcement) -> str:
    """Run a claimed row's receiver with its arguments rebuilt (rows read afresh)."""
    try:
        receiver, calls = _rebuilt(row, decode_all([row.arguments], _alias(row))[0])
    except Exception as exc:
        return _failed(row, exc)
    return run(row, receiver, calls)


def hear_claimed_together(rows: list[Announcement]) -> Counter[str]:
    """Run rows of one claim with their arguments rebuilt (the rows they name read in one
    query a model), in order; counts by status after."""
    counts: Counter[str] = Counter()
    if not rows:
        return counts
    kept: list[Announcement] = []
    hearing: list[Hearing] = []
    stored = decode_all([row.arguments for row in rows], _alias(rows[0]))
    for row, arguments in zip(rows, stored, strict=True):
        try:
            hearing.append(_rebuilt(row, arguments))
        except Exception as exc:
            counts[_failed(row, exc)] += 1
            continue
        kept.append(row)
    counts.update(hear_rows(kept, hearing))
    return counts


def _alias(row: Announcement) -> str:
    return row._state.db or router.db_for_read(Announcement)


def _rebuilt(row: Announcement, arguments: dict[str, Any] | Exception) -> Hearing:
    """The receiver of a stored row and what it is called with; raises what stops that."""
    if isinstance(arguments, Exception):
        raise arguments
    signal = signals.SIGNALS.get(row.signal)
    sender = apps.get_model(row.sender)
    calls = {"signal": signal, "sender": sender, "event_id": row.event_id, **arguments}
    receiver = dict(receivers_of(signal, sender)).get(row.receiver) if signal else None
    return receiver, calls


def hear_due(*, by: str, limit: int = 200) -> dict[str, int]:
    """Run the receivers due again (failed, or their process died) until none is left or
    ``limit``; counts by status after."""
    counts: Counter[str] = Counter()
    leases.give_up_exhausted(timezone.now(), model=Announcement)
    for _ in range(limit):
        row = leases.claim_next(by=by, model=Announcement)
        if row is None:
            break
        counts[hear_claimed(row)] += 1
    return dict(counts)


def due_announcements() -> list[int]:
    """Rows to run again now (their process died, or the back-off ran out), oldest first."""
    now = timezone.now()
    leases.give_up_exhausted(now, model=Announcement)
    query = Announcement.objects.filter(leases.waiting(now, Announcement)).order_by("pk")
    return list(query.values_list("pk", flat=True))


def next_announcement_due() -> datetime | None:
    """When the earliest running or backing-off row is due again (None: none is)."""
    return leases.next_expiry(Announcement)


def count_not_heard() -> int:
    """Announcements a receiver never heard to the end (one per receiver and change: the
    rows the admin lists as not heard)."""
    return Announcement.objects.filter(status=Status.FAILED).count()


def dismiss_announcements(pks: list[int], *, by: str) -> int:
    """Leave rows that are not heard as dismissed by staff (``by``); how many."""
    rows = Announcement.objects.filter(pk__in=pks, status=Status.FAILED)
    return rows.update(status=Status.DISMISSED, claimed_by=by[:200])


def prune_announcements(*, older_than_days: int) -> int:
    """Delete heard and dismissed rows announced more than ``older_than_days`` ago; how many."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    old = Announcement.objects.filter(
        created_at__lt=cutoff, status__in=[Status.PROCESSED, Status.DISMISSED]
    )
    deleted, _ = old.delete()
    return deleted


# The outbox's own tasks: the deferred run of one receiver, and on django-tasks-db the
# lease sweep of announcements (one task, scheduled once for whatever is due first).


@background_task
def hear_announcement(announcement_pk: int) -> str:
    """Run one announcement's receiver again; its status after."""
    return hear(announcement_pk, by=leases.claimant("hear_announcement task"))


@background_task
def hear_announcements(announcement_pks: list[int]) -> dict[str, int]:
    """Run the receivers of the changes one transaction announced (a page of a sync), in
    order; counts by status after. Rows another run took meanwhile are left to it."""
    rows = leases.claim_many(
        announcement_pks, by=leases.claimant("hear_announcements task"), model=Announcement
    )
    return dict(hear_claimed_together(rows))


@background_task
def sweep_announcement_leases() -> dict[str, int]:
    """Run the receivers due again (their lease or back-off ran out); again while rows wait."""
    return sweep_announcements("sweep_announcement_leases task")


def sweep_announcements(label: str) -> dict[str, int]:
    """Run the receivers due now, and make sure the sweep runs again when the next one is due
    (django-tasks-db); counts by status after."""
    heard = hear_due(by=leases.claimant(label))
    expiry = next_announcement_due()
    if expiry is not None and on_database(sweep_announcement_leases):
        ensure_run_after(sweep_announcement_leases, expiry)
    return heard


def schedule(announcement_pk: int, due: datetime) -> None:
    """Wake a worker when a failed receiver is due again (inline: the periodic sweep does).

    On django-tasks-db the lease sweep, scheduled once for whatever is due
    first, runs it; elsewhere a deferred task of its own.
    """
    if not background_enabled():
        return
    if on_database(sweep_announcement_leases):
        ensure_run_after(sweep_announcement_leases, due)
        return
    task = routed(hear_announcement)
    if task.get_backend().supports_defer:
        task.using(run_after=due + timedelta(seconds=1)).enqueue(announcement_pk)


def dispatch_announcement(announcement_pk: int) -> None:
    """Run an announcement's receiver again: on our task backend, or inline without one."""
    if background_enabled():
        routed(hear_announcement).enqueue(announcement_pk)
    else:
        hear(announcement_pk, by=leases.claimant("inline hearing"))
