"""Items the gateway sent that cannot be stored: kept, counted, and tried again.

An item without a usable ``id`` (or not a JSON object at all) cannot become a
mirror row: nothing would tell it apart from the next one. It must not sink
its page, and it must not vanish either. :func:`quarantine` keeps it with its
payload and the reason; :func:`retry_quarantined` tries every unresolved one
again (a later version of this app may read it); the sync calls both, and
counts them in its result.

The sync calls::

    retry_quarantined(account)                        # once, before reading
    quarantine(account, page.rejected)                # for every page read
    report(account, resource)                         # at the end: what to tell

:func:`report` counts what is still kept, what was never reported before and
what the app can still try (``retriable``: its payload has a usable id, as a
refund whose charge is not mirrored yet). ``paycharge_sync``'s exit status is
for the last two only, and the command then marks the items reported
(:func:`mark_reported`): an item without an id can never be stored from its
payload, so it is said once and then waits for staff, who settle it in the
admin (:func:`store_quarantined_by_id` with the id they found, or :func:`dismiss_quarantined`
with a reason that is kept). Other syncs (the admin's, the periodic one) count
them without marking them, so the command still reports them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from ... import conf, observe
from ...client import Rejected, ShapeError, parse_charge
from ...exceptions import PayChargeError, ServiceError
from ...models import Charge, QuarantinedItem
from ...models.payload import PayloadEncoder
from .reads import refresh_charge
from .upsert import upsert_charges

logger = logging.getLogger("django_paycharge.services")

_MAX_REASON = 1000


# Numbers written back as the JSON numbers they came as (PayloadEncoder); ASCII escapes,
# so NULs and lone surrogates survive any database's text column.
_TEXT = PayloadEncoder(ensure_ascii=True, sort_keys=True)


def payload_text(payload: Any) -> str:
    """The item as JSON text, as received (keys sorted)."""
    return _TEXT.encode(payload)


def usable_id(payload: Any) -> uuid.UUID | None:
    """The item's ``id`` when it is one a row could be stored under, else None."""
    if not isinstance(payload, dict):
        return None
    try:
        return uuid.UUID(str(payload.get("id")))
    except ValueError:
        return None


def quarantine(
    account: str,
    rejected: Iterable[Rejected],
    *,
    resource: str = QuarantinedItem.Resource.CHARGE,
    source: str = "sync",
) -> int:
    """Keep each rejected item (once per distinct payload); returns how many were given."""
    count = 0
    now = timezone.now()
    for item in rejected:
        count += 1
        text = payload_text(item.raw)
        digest = hashlib.sha256(text.encode()).hexdigest()
        seen = QuarantinedItem.objects.filter(
            account=account, resource=resource, payload_digest=digest
        )
        # Seen before: count it on its row (a dismissed one stays dismissed).
        if seen.update(
            times_seen=F("times_seen") + 1, last_seen_at=now, reason=item.reason[:_MAX_REASON]
        ):
            continue
        try:
            with transaction.atomic():
                QuarantinedItem.objects.create(
                    account=account,
                    resource=resource,
                    payload=text,
                    payload_digest=digest,
                    reason=item.reason[:_MAX_REASON],
                    source=source,
                    first_seen_at=now,
                    last_seen_at=now,
                    retriable=usable_id(item.raw) is not None,
                )
        except IntegrityError:  # another process kept the same payload meanwhile
            seen.update(times_seen=F("times_seen") + 1, last_seen_at=now)
    if count:
        logger.warning("%d %s item(s) of account %s quarantined", count, resource, account)
    observe.quarantined(account, resource, count)
    return count


def retry_quarantined(
    account: str,
    *,
    resource: str = QuarantinedItem.Resource.CHARGE,
    parse: Callable[[Any], Any] | None = None,
    store: Callable[[Any], object] | None = None,
) -> int:
    """Try to store every unresolved quarantined item again; returns how many still fail.

    ``parse`` reads a payload (raising :class:`ShapeError` when it still cannot;
    charges: the client's parser) and ``store`` writes what it read (charges:
    the guarded upsert).
    """
    parse = parse or parse_charge
    if store is None:
        store = lambda remote: upsert_charges([remote], account=account)  # noqa: E731
    still = 0
    for item in unresolved(account, resource).iterator():
        rows = QuarantinedItem.objects.filter(pk=item.pk)
        try:
            remote = parse(json.loads(item.payload, parse_float=Decimal))
            store(remote)
        except (ShapeError, ValueError) as exc:
            still += 1
            rows.update(attempts=F("attempts") + 1, reason=str(exc)[:_MAX_REASON])
            continue
        except (PayChargeError, DatabaseError) as exc:
            # Read, but not stored now (a busy database, say): tried again next time.
            still += 1
            rows.update(attempts=F("attempts") + 1, retriable=True)
            logger.warning("Quarantined %s %s not stored: %s", resource, item.pk, exc)
            continue
        _resolve(rows, QuarantinedItem.Resolution.STORED, stored_as=remote.id)
        logger.info("Quarantined %s stored as %s", resource, remote.id)
    return still


def _resolve(
    rows: QuerySet[QuarantinedItem],
    resolution: str,
    *,
    stored_as: uuid.UUID | None = None,
    note: str = "",
    by: str = "",
) -> int:
    return rows.filter(resolved_at__isnull=True).update(
        attempts=F("attempts") + (1 if resolution == QuarantinedItem.Resolution.STORED else 0),
        resolved_at=timezone.now(),
        resolved_id=stored_as,
        resolution=resolution,
        resolution_note=note,
        resolved_by=by[:150],
    )


@dataclass(frozen=True)
class Report:
    """Quarantined items of one run: still kept, reported for the first time, still tried."""

    kept: int = 0
    new: int = 0
    retriable: int = 0

    @property
    def needs_attention(self) -> int:
        """What a scheduler should hear about (the command's exit status)."""
        return self.new + self.retriable

    def __add__(self, other: Report) -> Report:
        return Report(
            self.kept + other.kept, self.new + other.new, self.retriable + other.retriable
        )


def _waiting(account: str, resources: Iterable[str]) -> QuerySet[QuarantinedItem]:
    return QuarantinedItem.objects.filter(
        account=account, resolved_at__isnull=True, resource__in=list(resources)
    )


def report(account: str, *resources: str) -> Report:
    """Count the account's unresolved items of ``resources``: kept, never reported, retriable."""
    waiting = _waiting(account, resources)
    new = waiting.filter(reported_at__isnull=True).count()
    return Report(waiting.count(), new, waiting.filter(retriable=True).count())


def mark_reported(account: str, *resources: str) -> int:
    """Record that the account's unresolved items of ``resources`` were reported (by whoever
    tells a person or a scheduler: ``paycharge_sync``'s exit status); returns how many."""
    waiting = _waiting(account, resources).filter(reported_at__isnull=True)
    return waiting.update(reported_at=timezone.now())


def dismiss_quarantined(items: QuerySet[QuarantinedItem], reason: str, *, by: str = "") -> int:
    """Settle unresolved ``items`` as dismissed, keeping ``reason``; returns how many."""
    if not reason.strip():
        raise ServiceError(gettext("Say why the items are dismissed: the reason is kept."))
    return _resolve(items, QuarantinedItem.Resolution.DISMISSED, note=reason.strip(), by=by)


def store_quarantined_by_id(
    item: QuarantinedItem, charge_id: uuid.UUID | str, *, by: str = ""
) -> Charge:
    """Settle a quarantined charge by reading it from the gateway by the id staff found.

    The gateway is the source of truth: the charge is read and stored as any
    other (its store from the payload when it names one, else the account's).
    Raises :class:`~django_paycharge.exceptions.ServiceError` for an item that
    is not a charge, and the gateway's errors (``NotFoundError``) as they come.
    """
    if item.resource != QuarantinedItem.Resource.CHARGE:
        raise ServiceError(
            gettext("Only a quarantined charge can be read from the gateway by its id.")
        )
    try:
        payload = json.loads(item.payload)
    except ValueError:
        payload = None
    store = payload.get("store_id") if isinstance(payload, dict) else None
    try:
        store_id = uuid.UUID(str(store)) if store else conf.get_account(item.account).store_id
    except ValueError:
        store_id = conf.get_account(item.account).store_id
    charge = refresh_charge(charge_id, store_id, account=item.account)
    note = gettext("Read from the gateway by the id %(id)s.") % {"id": charge.gateway_id}
    rows = QuarantinedItem.objects.filter(pk=item.pk)
    _resolve(rows, QuarantinedItem.Resolution.STORED, stored_as=charge.gateway_id, note=note, by=by)
    return charge


def unresolved(
    account: str | None = None, resource: str = QuarantinedItem.Resource.CHARGE
) -> QuerySet[QuarantinedItem]:
    """The quarantined items of ``resource`` (of ``account``) not stored nor dismissed yet."""
    query = QuarantinedItem.objects.filter(resolved_at__isnull=True, resource=resource)
    return query.filter(account=account) if account else query


def readable_alone(open_charges: QuerySet[Charge]) -> QuerySet[Charge]:
    """The charges of ``open_charges`` that can be read one by one (their store is known).

    A charge read without its store (a webhook payload, an odd list item)
    cannot be read alone: the path needs the store. It is refreshed when a
    list covers it again; here it is logged and left, never an error.
    """
    storeless = open_charges.filter(store_id__isnull=True).count()
    if storeless:
        logger.warning(
            "%d open charge(s) without a store id cannot be read one by one; a listing "
            "will refresh them",
            storeless,
        )
    return open_charges.filter(store_id__isnull=False)
