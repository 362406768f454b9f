"""Store refunds and cancels read from the gateway, and send their signals after commit.

Several paths store the same refund at the same moment (the service's own
answer, a ``refund_finished`` webhook, a sync): each store inserts the row in
one statement or, when it is there already, locks it, and a status only moves forward,
so a stale read never takes a refund back to ``pending``. Storing a refund
also sets its charge's ``refunds_total`` (and the charge's it was listed under
before, when the gateway moved it) to the sum of its successful refunds, counted
after the row is written and with the charge locked (:func:`_count_refunds`, the
one writer of that column): the last transaction to commit counts every refund
committed before it and its own, so concurrent refunds and a recount add up on
PostgreSQL's READ COMMITTED too. Signals go through
:func:`django_paycharge.outbox.send`: once the change is committed on the
alias it was written to, and a failing receiver is logged and never undoes it.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from django.db import connections, models, router, transaction
from django.db.models import OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from ... import outbox, signals
from ...client.lifecycle_types import Cancel as RemoteCancel
from ...client.lifecycle_types import Refund as RemoteRefund
from ...client.vocabulary import operation_rank
from ...models import Cancel, Charge, Refund
from ...models.fit import fit_row, without_nul
from .inserts import Link, as_stored, insert_and_link, insert_once


def _values(
    model: type[models.Model], remote: RemoteRefund | RemoteCancel, charge: Charge
) -> dict[str, Any]:
    """The row's columns; a value that does not fit its column is stored as unknown (NULL)."""
    values: dict[str, Any] = {
        "charge": charge,
        "account": charge.account,
        "store_id": remote.store_id or charge.store_id,
        "status": remote.status,
        "status_rank": operation_rank(remote.status),
        "error": remote.error.raw if remote.error is not None else None,
        "metadata": remote.metadata,
        "mode": remote.mode,
        "created_on": remote.created_on,
        "updated_on": remote.updated_on,
        "raw": remote.raw,
        "synced_at": timezone.now(),
    }
    if isinstance(remote, RemoteRefund):
        values.update(
            amount=remote.amount,
            currency=remote.currency,
            amount_formatted=remote.amount_formatted,
            reason=remote.reason,
            message=remote.message,
        )
    # The same fitting as charges: NUL as U+FFFD (PostgreSQL refuses it), too big as NULL.
    return fit_row(model, without_nul(values))


def _stale(values: dict[str, Any], row: Any, by_updated_on: bool) -> bool:
    """Whether ``values`` are older than ``row``: a lower rank, or (``by_updated_on``, for
    statuses that move to and fro within a rank) the same rank and an earlier ``updated_on``."""
    if values["status_rank"] != row.status_rank:
        return bool(values["status_rank"] < row.status_rank)
    new, old = values.get("updated_on"), getattr(row, "updated_on", None)
    return by_updated_on and new is not None and old is not None and new < old


def _upsert(
    model: type[Any],
    gateway_id: Any,
    values: dict[str, Any],
    *,
    by_updated_on: bool = False,
    key: dict[str, Any] | None = None,
) -> tuple[Any, Any]:
    """Insert or lock the row, move it forward; ``(row, the row before or None when new)``.

    The row is the one whose ``gateway_id`` is ``gateway_id``, or whose fields are ``key``
    (a model keyed otherwise: a token by its account and id). Runs in the caller's
    transaction. A new row is one statement (the service's own answer, usually first); a
    row already stored (a webhook or a sync came first) is locked, and a stale read (see
    :func:`_stale`) only touches ``synced_at``.
    """
    lookup = key if key is not None else {"gateway_id": gateway_id}
    inserted = _insert(model, lookup, values)
    if inserted is not None:
        return inserted, None
    row = model.objects.select_for_update().get(**lookup)
    before = copy.copy(row)
    if _stale(values, row, by_updated_on):
        model.objects.filter(pk=row.pk).update(synced_at=values["synced_at"])
        return row, before
    for name, value in values.items():
        setattr(row, name, value)
    row.save()
    return row, before


def _insert(
    model: type[Any], lookup: dict[str, Any], values: dict[str, Any], link: Link | None = None
) -> Any | None:
    """The new row of ``values``, inserted in one statement (``link`` written with it);
    None, and nothing written, when the row of ``lookup`` (the fields of a unique
    constraint) is there already."""
    new = {**values, **lookup, "first_seen_at": values["synced_at"]}
    keys = {k: v.pk if isinstance(v, models.Model) else v for k, v in new.items()}
    alias = router.db_for_write(model)
    connection = connections[alias]
    heard = link is not None and any(s.has_listeners(model) for s in link.announces)
    if link is not None and connection.vendor == "postgresql" and not heard:
        pk = insert_and_link(model, keys, link, connection, alias, conflict=tuple(lookup))
        return None if pk is None else as_stored(model, pk, new, alias)
    pk = insert_once(model, keys, conflict=tuple(lookup))
    if pk is None:
        return None
    row = as_stored(model, pk, new, alias)
    if link is not None:
        link.write(row)
    return row


def _refund_heard() -> bool:
    """Whether a receiver listens to what a new refund announces."""
    heard = (signals.refund_created, signals.refund_status_changed)
    return any(signal.has_listeners(Refund) for signal in heard)


def _counted(refund: Refund | None) -> tuple[Any, int] | None:
    """Where ``refund`` counts in a ``refunds_total`` (its charge, its amount), None if not."""
    if refund is None or refund.status != "successful" or not refund.amount:
        return None
    return refund.charge_id, refund.amount


def _count_refunds(charges: QuerySet[Charge]) -> int:
    """Set ``refunds_total`` of ``charges`` to the sum of their successful refunds.

    The charges are locked first (``FOR NO KEY UPDATE``, in the order of their
    keys; it does not wait for a refund's insert, which holds only a key share),
    and the sum is taken by the next statement: on PostgreSQL's READ COMMITTED,
    that statement sees every refund committed by a writer the lock waited for.
    (One ``UPDATE ... SET = (SELECT SUM ...)`` that waits on the lock would write
    the sum of the rows it saw before waiting.) SQLite has one writer at a time.
    Must run in a transaction; returns how many charges were updated.
    """
    if connections[charges.db].features.has_select_for_update:
        # Streamed, not kept: a recount of every charge holds no list of them.
        locking = charges.order_by("pk").select_for_update(no_key=True).values_list("pk")
        for _ in locking.iterator(chunk_size=2000):
            pass
    totals = (
        Refund.objects.using(charges.db)
        .filter(charge=OuterRef("pk"), status="successful")
        .order_by()
        .values("charge")
        .annotate(total=Sum("amount"))
        .values("total")
    )
    return int(charges.update(refunds_total=Coalesce(Subquery(totals), Value(0))))


def recount_refunds_total(charges: QuerySet[Charge] | None = None) -> int:
    """Set ``refunds_total`` of ``charges`` (all by default) from their successful refunds.

    For refund rows written other than by :func:`store_refund`, which keeps the
    column itself: a shop's fixtures, scripts or data migrations. Locks every
    charge given, then one UPDATE of them (see :func:`_count_refunds`: a refund
    stored meanwhile is counted); returns how many were updated.
    """
    if charges is None:
        charges = Charge.objects.all()
    else:  # the rows it names, whatever it is (distinct, sliced, annotated): those lock
        charges = Charge.objects.using(charges.db).filter(pk__in=charges.values("pk"))
    with transaction.atomic(using=charges.db):
        return _count_refunds(charges)


def store_refund(remote: RemoteRefund, *, charge: Charge, link: Link | None = None) -> Refund:
    """Insert or move forward the mirror of one refund of ``charge``; signals after commit.

    ``link``: the request that asked for it, marked done once it is stored (its
    ``write`` run after the refund's own transaction). A new refund nobody listens to
    is one statement on PostgreSQL, its link with it (:func:`.inserts.insert_and_link`).
    """
    alias = router.db_for_write(Refund)
    values = _values(Refund, remote, charge)
    if values["status"] != "successful" and not _refund_heard():
        # Nothing to count and nothing to announce: a new row is its one statement, alone.
        new = _insert(Refund, {"gateway_id": remote.id}, values, link)
        if new is not None:
            return cast(Refund, new)
    refund = _store_refund(remote, charge, values, alias)
    if link is not None:
        link.write(refund)
    return refund


def _store_refund(
    remote: RemoteRefund, charge: Charge, values: dict[str, Any], alias: str
) -> Refund:
    with transaction.atomic(using=alias):
        refund, before = _upsert(Refund, remote.id, values)
        created, previous = before is None, getattr(before, "status", None)
        # Counted again when the row changes a total: it counts now or counted before, for
        # another amount or under another charge (the gateway may list it under two).
        if _counted(refund) != _counted(before):
            moved_from = getattr(before, "charge_id", refund.charge_id)
            charges = Charge.objects.using(alias).filter(pk__in={refund.charge_id, moved_from})
            _count_refunds(charges)
        if created:
            outbox.send(
                signals.refund_created, sender=Refund, using=alias, refund=refund, charge=charge
            )
        if created or previous != refund.status:
            outbox.send(
                signals.refund_status_changed,
                sender=Refund,
                using=alias,
                refund=refund,
                charge=charge,
                previous_status=previous,
                status=refund.status,
            )
    result: Refund = refund
    return result


def store_cancel(remote: RemoteCancel, *, charge: Charge) -> Cancel:
    """Insert or move forward the mirror of one cancel; ``charge_canceled`` when it succeeds."""
    alias = router.db_for_write(Cancel)
    with transaction.atomic(using=alias):
        cancel, before = _upsert(Cancel, remote.id, _values(Cancel, remote, charge))
        previous = getattr(before, "status", None)
        if cancel.status == "successful" and previous != "successful":
            outbox.send(
                signals.charge_canceled, sender=Charge, using=alias, charge=charge, cancel=cancel
            )
    result: Cancel = cancel
    return result
