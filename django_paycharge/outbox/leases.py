"""Leased claims on webhook deliveries and announcements: who runs one, since when, until when.

A claim is one conditional UPDATE, and no lock is held while the delivery is
processed (which re-reads the gateway and can take seconds). It succeeds only
if the delivery is waiting, or if its last claim's lease ran out: the process
that held it died or hangs, and whoever comes next (a worker, a task, a
command run) takes it over. The claimant records its result with an UPDATE
that matches its own claim only (``claimed_at``), so a claimant that was
taken over cannot overwrite the newer result.

Two kinds of rows are leased the same way: webhook deliveries (the default
``model``) and announcements (a receiver's hearing of a change, see
:mod:`.announcements`). A leased model has ``status``, ``attempts``,
``claimed_at``, ``lease_until``, ``claimed_by``, ``last_error`` and
``processed_at``, and a ``Status`` with ``RECEIVED`` (waiting),
``PROCESSING`` (claimed) and ``FAILED``; ``LEASE_ATTEMPTS`` bounds its claims.
"""

from __future__ import annotations

import enum
import logging
import os
import socket
import threading
import time
from datetime import datetime
from typing import Any

from django.db import connections
from django.db.models import F, Min, Model, Q
from django.utils import timezone
from django.utils.translation import gettext

from .. import conf, observe
from ..models import WebhookDelivery

#: Claims of one delivery (its first processing included) before it is left failed.
MAX_ATTEMPTS = 5

Status = WebhookDelivery.Status

logger = logging.getLogger("django_paycharge.signals")


def max_attempts(model: type[Model]) -> int:
    """Claims of one row of ``model`` before it is left failed."""
    return int(getattr(model, "LEASE_ATTEMPTS", MAX_ATTEMPTS))


def claimant(label: str) -> str:
    """How a claim names its holder in the admin: what, on which host, which process."""
    return f"{label} ({socket.gethostname()} pid {os.getpid()})"[:200]


def stuck(now: datetime, model: type[Model] = WebhookDelivery) -> Q:
    """Claimed, and the lease ran out (or was never set: claimed before leases existed)."""
    claimed = model.Status.PROCESSING  # type: ignore[attr-defined]
    return Q(status=claimed) & (Q(lease_until__lte=now) | Q(lease_until__isnull=True))


def waiting(now: datetime, model: type[Model] = WebhookDelivery) -> Q:
    """What a worker should take: received, or stuck with attempts left."""
    return Q(status=model.Status.RECEIVED) | (  # type: ignore[attr-defined]
        stuck(now, model) & Q(attempts__lt=max_attempts(model))
    )


def claim(
    pk: int,
    *,
    by: str,
    retry_failed: bool = False,
    force: bool = False,
    model: type[Model] = WebhookDelivery,
) -> Any:
    """Claim one row for processing; None when it is not to be taken now.

    Waiting rows are taken; ``retry_failed`` also takes a failed one;
    ``force`` (the admin's Reprocess, Retry) any one that no live claim holds.
    """
    now = timezone.now()
    status = model.Status  # type: ignore[attr-defined]
    allowed = waiting(now, model)
    if retry_failed:
        allowed |= Q(status=status.FAILED)
    if force:
        allowed |= ~Q(status__in=[status.RECEIVED, status.PROCESSING]) | stuck(now, model)
    values = {
        "status": status.PROCESSING,
        "attempts": F("attempts") + 1,
        "claimed_at": now,
        "lease_until": now + conf.webhook_lease(),
        "claimed_by": by[:200],
    }
    rows = model._default_manager.filter(allowed, pk=pk)
    # A claim of a waiting row first (one statement); then of a stuck one, which takes
    # over a dead worker's claim and is counted as such.
    taken_over = False
    if not rows.exclude(status=status.PROCESSING).update(**values):
        taken_over = bool(rows.filter(status=status.PROCESSING).update(**values))
        if not taken_over:
            give_up_exhausted(now, pk=pk, model=model)
            return None
    row = model._default_manager.get(pk=pk)
    if taken_over and isinstance(row, WebhookDelivery):
        observe.lease_taken_over(row.account)
    return row


def claim_next(*, by: str, model: type[Model] = WebhookDelivery) -> Any:
    """Claim the oldest waiting row (several workers may race: each tries the next)."""
    now = timezone.now()
    order = ("received_at", "pk") if model is WebhookDelivery else ("pk",)
    candidates = (
        model._default_manager.filter(waiting(now, model))
        .order_by(*order)
        .values_list("pk", flat=True)
    )
    for pk in candidates[:20]:
        row = claim(pk, by=by, model=model)
        if row is not None:
            return row
    return None


def _mine(row: Any) -> Any:
    """``row`` while its claim is the one this process holds."""
    model = type(row)
    return model._default_manager.filter(
        pk=row.pk, status=model.Status.PROCESSING, claimed_at=row.claimed_at
    )


def finish(row: Any, **update: Any) -> bool:
    """Record the outcome of ``row``'s claim; False if another run took it over meanwhile."""
    delivery = isinstance(row, WebhookDelivery)
    if delivery:
        # The gateway's request id of the processing's last answer: logs, rows and traces
        # join on it.
        update.setdefault("gateway_request_id", observe.request_id())
    if not _mine(row).update(lease_until=None, **update):
        return False
    status = update.get("status", Status.PROCESSING)
    if delivery and status != Status.RECEIVED:  # a claim given back is not an end
        observe.delivery_finished(
            row.account, row.event, status, row.received_at, update.get("processed_at")
        )
    return True


def hold(row: Any, until: datetime, **update: Any) -> bool:
    """Keep ``row``'s claim until ``until``, then let the next run take it (a back-off).

    How a failed attempt waits before the next: the claim stays, its lease
    ends at the retry's time, and whoever takes over stuck rows runs it again.
    False if another run took it over meanwhile.
    """
    return bool(_mine(row).update(lease_until=until, **update))


def release(row: Any) -> None:
    """Give a claim back unfinished (the process is shutting down): waiting again at once."""
    finish(row, status=type(row).Status.RECEIVED, attempts=F("attempts") - 1)


def give_up_exhausted(
    now: datetime, pk: int | None = None, model: type[Model] = WebhookDelivery
) -> int:
    """Leave failed the stuck rows whose every attempt died; how many.

    Without this, a row whose processing kills its worker each time would be
    taken over forever.
    """
    query = model._default_manager.filter(stuck(now, model), attempts__gte=max_attempts(model))
    if pk is not None:
        query = query.filter(pk=pk)
    return query.update(
        status=model.Status.FAILED,  # type: ignore[attr-defined]
        lease_until=None,
        processed_at=now,
        last_error=_gave_up(model),
    )


def _gave_up(model: type[Model]) -> str:
    if model is WebhookDelivery:
        return gettext(
            "Processing was claimed %(attempts)d times and never finished (its worker died "
            "or hung each time). It is not tried again automatically: reprocess it from the "
            "admin once the cause is fixed."
        ) % {"attempts": MAX_ATTEMPTS}
    return gettext(
        "The receiver was started %(attempts)d times and never returned (its process died "
        "or hung each time). It is not run again automatically: retry it from the admin "
        "once the cause is fixed."
    ) % {"attempts": max_attempts(model)}


def next_expiry(model: type[Model] = WebhookDelivery) -> datetime | None:
    """When the earliest live claim's lease runs out (None when no row is claimed)."""
    live = model._default_manager.filter(
        status=model.Status.PROCESSING,  # type: ignore[attr-defined]
        lease_until__isnull=False,
    )
    earliest: datetime | None = live.aggregate(at=Min("lease_until"))["at"]
    return earliest


def claim_many(pks: list[int], *, by: str, model: type[Model]) -> list[Any]:
    """Claim the waiting rows of ``pks`` in one statement; the rows claimed, in ``pks`` order.

    Rows another run holds or has finished are left out. All the rows claimed
    share one ``claimed_at``: :func:`finish_many` and :class:`Heartbeat` name
    the claim by it.
    """
    now = timezone.now()
    claimed = model._default_manager.filter(
        pk__in=pks,
        status=model.Status.RECEIVED,  # type: ignore[attr-defined]
    ).update(
        status=model.Status.PROCESSING,  # type: ignore[attr-defined]
        attempts=F("attempts") + 1,
        claimed_at=now,
        lease_until=now + conf.webhook_lease(),
        claimed_by=by[:200],
    )
    if not claimed:
        return []
    rows = model._default_manager.filter(pk__in=pks, claimed_at=now, claimed_by=by[:200])
    return sorted(rows, key=lambda row: pks.index(row.pk))


def finish_many(
    model: type[Model], pks: list[int], claimed_at: datetime, *, using: str, **update: Any
) -> int:
    """Record one outcome for rows of one claim (one statement); how many were still ours.

    Written out: the ORM compiled the same UPDATE of a page's keys for every page,
    a tenth of what a receiver cost a sync (``bench/run receivers``).
    """
    if not pks:
        return 0
    conn, meta = connections[using], model._meta
    fields = {f.name: f for f in meta.concrete_fields}

    def quote(name: str | None) -> str:
        return str(conn.ops.quote_name(str(name)))

    values = {"lease_until": None, **update}
    sets = ", ".join(f"{quote(fields[name].column)} = %s" for name in values)
    params = [fields[name].get_db_prep_save(_plain(v), conn) for name, v in values.items()]
    running = _plain(model.Status.PROCESSING)  # type: ignore[attr-defined]
    params += [running, fields["claimed_at"].get_db_prep_save(claimed_at, conn)]
    status, claimed = quote(fields["status"].column), quote(fields["claimed_at"].column)
    keys: list[Any] = list(pks)
    if conn.vendor == "postgresql":
        # One array literal, not a placeholder a key: psycopg parses a statement of more
        # than 50 again on every page, and adapts each value in Python.
        among = f"= ANY(%s::{meta.pk.rel_db_type(conn)}[])"
        keys = ["{" + ",".join(str(int(pk)) for pk in pks) + "}"]
    else:
        among = f"IN ({', '.join(['%s'] * len(pks))})"
    statement = (
        f"UPDATE {quote(meta.db_table)} SET {sets} "  # noqa: S608 - names only
        f"WHERE {status} = %s AND {claimed} = %s AND {quote(meta.pk.column)} {among}"
    )
    with conn.cursor() as cursor:
        cursor.execute(statement, [*params, *keys])
        return int(cursor.rowcount)


def _plain(value: Any) -> Any:
    """A choice as the plain value a driver binds."""
    return value.value if isinstance(value, enum.Enum) else value


class Heartbeat:
    """Renew the leases of rows of one claim while their work runs, so that no one takes
    them over meanwhile (a lease that ran out means its process died, not that it is slow).

    Every third of the lease (``WEBHOOK_LEASE_SECONDS``) until :meth:`stop`, the
    process's one renewing thread (:class:`_Renewer`) renews them; rows finished or
    taken over meanwhile are left alone (the renewal matches the claim). Use it as a
    context manager.
    """

    def __init__(self, model: type[Model], pks: list[int], claimed_at: datetime) -> None:
        self.model, self.pks, self.claimed_at = model, list(pks), claimed_at
        self.lease = conf.webhook_lease()
        self.every = self.lease.total_seconds() / 3
        self.due = 0.0  # when the renewing thread renews these rows next (monotonic)

    def __enter__(self) -> Heartbeat:
        if self.pks:
            _RENEWER.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop renewing (the rows' outcome is recorded, or their claim given back)."""
        _RENEWER.remove(self)

    def renew(self) -> int:
        """Move the rows' leases a full lease past now; how many were still this claim's."""
        mine = self.model._default_manager.filter(
            pk__in=self.pks,
            status=self.model.Status.PROCESSING,  # type: ignore[attr-defined]
            claimed_at=self.claimed_at,
            lease_until__isnull=False,
        ).exclude(claimed_by="")  # a row backing off after an error keeps its back-off
        return int(mine.update(lease_until=timezone.now() + self.lease))


def renewing() -> int:
    """How many claims this process renews now."""
    return _RENEWER.count()


class _Renewer:
    """The one thread of a process that renews its running claims' leases.

    A thread started and joined for each claim cost a sync more than the
    receivers of its page (``bench/run receivers``); this one is started
    once, when a first claim needs it, and sleeps until the next renewal is
    due. A renewal racing the end of its claim changes nothing: it matches
    the claim, which the end has already moved on.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Nothing renewed, no thread (also in a forked child, where the lock may have been
        held by the parent's thread and no thread runs)."""
        self._claims: dict[int, Heartbeat] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._wakes_at = float("inf")

    def add(self, beat: Heartbeat) -> None:
        with self._changed:
            beat.due = time.monotonic() + beat.every
            self._claims[id(beat)] = beat
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="paycharge-lease", daemon=True
                )
                self._thread.start()
            elif beat.due < self._wakes_at:
                self._changed.notify()

    def remove(self, beat: Heartbeat) -> None:
        with self._changed:
            self._claims.pop(id(beat), None)

    def count(self) -> int:
        with self._changed:
            return len(self._claims)

    def _run(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                due = [beat for beat in self._claims.values() if beat.due <= now]
                for beat in due:
                    beat.due = now + beat.every
                if not due:
                    self._wakes_at = min((b.due for b in self._claims.values()), default=now + 60)
                    self._changed.wait(self._wakes_at - now)
                    continue
            for beat in due:
                try:
                    beat.renew()
                except Exception:  # the next beat tries again; the lease runs out if none can
                    logger.exception("Could not renew the leases of %d rows", len(beat.pks))
            connections.close_all()  # this thread's connections only: renewals are rare


_RENEWER = _Renewer()
os.register_at_fork(after_in_child=_RENEWER.reset)
