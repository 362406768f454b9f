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
    result.quarantined = unresolved(account).count()  # at the end: what is still kept

The count at the end is what the command reports and exits non-zero for: every
item still waiting, whether this run or an earlier one found it, until it is
stored or someone dismisses it in the admin.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from .. import observe
from ..client import Rejected, ShapeError, parse_charge
from ..models import Charge, QuarantinedItem
from ..models.payload import PayloadEncoder
from .upsert import upsert_charges

logger = logging.getLogger("django_paycharge.services")

_MAX_REASON = 1000


# Numbers written back as the JSON numbers they came as (PayloadEncoder); ASCII escapes,
# so NULs and lone surrogates survive any database's text column.
_TEXT = PayloadEncoder(ensure_ascii=True, sort_keys=True)


def payload_text(payload: Any) -> str:
    """The item as JSON text, as received (keys sorted)."""
    return _TEXT.encode(payload)


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
        try:
            remote = parse(json.loads(item.payload, parse_float=Decimal))
        except (ShapeError, ValueError) as exc:
            still += 1
            QuarantinedItem.objects.filter(pk=item.pk).update(
                attempts=F("attempts") + 1, reason=str(exc)[:_MAX_REASON]
            )
            continue
        store(remote)
        QuarantinedItem.objects.filter(pk=item.pk).update(
            attempts=F("attempts") + 1, resolved_at=timezone.now(), resolved_id=remote.id
        )
        logger.info("Quarantined %s stored as %s", resource, remote.id)
    return still


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
