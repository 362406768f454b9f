"""Store webhook deliveries exactly once, then process them against the gateway's state.

Processing never trusts the body's state: for a charge event it re-reads the
charge from the gateway and upserts it, so repeated or out-of-order
deliveries all end in the gateway's current state.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from .. import signals
from ..client import ShapeError, parse_charge
from ..exceptions import NotFoundError, PayChargeError
from ..models import WebhookDelivery
from .charges import refresh_charge

logger = logging.getLogger("django_paycharge.webhooks")

_DROPPED_HEADERS = {"authorization", "cookie", "proxy-authorization"}
MAX_ATTEMPTS = 5


class MalformedDelivery(ValueError):
    """The body of an authenticated delivery is not the JSON object it should be."""


def store_delivery(
    *,
    body: bytes,
    headers: Mapping[str, str],
    account: str,
    problem: str = "",
    on_stored: Callable[[WebhookDelivery], object] | None = None,
) -> tuple[WebhookDelivery, bool]:
    """Store a genuine delivery once. Returns ``(delivery, created)``.

    A repeat (same delivery id, or same event and body when there is no id)
    returns the stored row with ``created`` False and is not processed again.
    ``problem`` marks a delivery already known to be unusable (too large).

    ``on_stored`` is called with a new delivery that is to be processed
    (stored as received, not failed), inside the transaction that stores it:
    whatever it writes commits with the delivery, and if it raises, nothing
    is stored and the exception propagates (the caller answers 503, the
    gateway retries). The view enqueues the processing task there, so a
    delivery is never stored without its task.
    """
    text = _storable(body.decode("utf-8", errors="replace"))
    event, delivery_id = "", None
    try:
        payload = _parse(text) if not problem else None
    except MalformedDelivery as exc:
        problem = str(exc)
        payload = None
    if payload is not None:
        event = _storable(str(payload.get("event") or ""))[:64]
        raw_id = payload.get("id")
        delivery_id = (
            _storable(str(raw_id))[:64] if isinstance(raw_id, str | int) and raw_id else None
        )
    if delivery_id:
        key = f"id:{delivery_id}"
    else:
        key = "sha256:" + hashlib.sha256(event.encode() + b"\0" + body).hexdigest()
    values: dict[str, Any] = {
        "account": account,
        "event": event,
        "delivery_id": delivery_id,
        "body": text,
        "headers": {
            k: _storable(v) for k, v in headers.items() if k.lower() not in _DROPPED_HEADERS
        },
        "received_at": timezone.now(),
    }
    if problem:
        values.update(status=WebhookDelivery.Status.FAILED, last_error=problem)
    inserted = False
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(dedupe_key=key, **values)
            inserted = True
            if on_stored is not None and delivery.status == WebhookDelivery.Status.RECEIVED:
                on_stored(delivery)
    except IntegrityError:
        if inserted:  # not a repeat: what on_stored wrote failed
            raise
        return WebhookDelivery.objects.get(dedupe_key=key), False
    # Stored (and committed) whatever a receiver does: a failing one is logged,
    # never turned into an error answer that would make the gateway retry.
    signals.send(signals.webhook_received, sender=WebhookDelivery, delivery=delivery)
    return delivery, True


def _storable(text: str) -> str:
    """``text`` without NUL characters, which PostgreSQL refuses in text columns.

    Without this, an authenticated body with a NUL (UTF-16 JSON, binary junk,
    a ``\\u0000`` escape in the event) could never be stored: every repeat
    answered 503 and the gateway retried forever.
    """
    return text.replace("\x00", "\ufffd")


def _parse(text: str) -> dict[str, Any]:
    try:
        payload = json.loads(text)
    except ValueError:
        raise MalformedDelivery(gettext("The body is not JSON.")) from None
    if not isinstance(payload, dict):
        raise MalformedDelivery(gettext("The body is not a JSON object."))
    return payload


def _claim(delivery_pk: int, *, retry_failed: bool) -> WebhookDelivery | None:
    """Mark a delivery as being processed, unless someone else already has it."""
    states = [WebhookDelivery.Status.RECEIVED]
    if retry_failed:
        states.append(WebhookDelivery.Status.FAILED)
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .filter(pk=delivery_pk, status__in=states)
            .first()
        )
        if delivery is None:
            return None
        delivery.status = WebhookDelivery.Status.PROCESSING
        delivery.attempts += 1
        delivery.save(update_fields=["status", "attempts"])
    return delivery


def process_delivery(delivery_pk: int, *, retry_failed: bool = False) -> str:
    """Process one stored delivery; returns its status afterwards.

    A delivery another worker is processing, or one already processed, is
    left alone. Errors are recorded on the delivery, not raised: the caller
    (a view, a task, a command) must never fail because of one.
    """
    delivery = _claim(delivery_pk, retry_failed=retry_failed)
    if delivery is None:
        status = WebhookDelivery.objects.filter(pk=delivery_pk).values_list("status", flat=True)
        return status.first() or "missing"
    update: dict[str, Any] = {"processed_at": timezone.now(), "last_error": ""}
    try:
        payload = _parse(delivery.body)
        charge = _apply(delivery, payload)
    except (MalformedDelivery, PayChargeError) as exc:
        update.update(status=WebhookDelivery.Status.FAILED, last_error=_describe(exc))
    except Exception as exc:  # a receiver of our signals failed: record it, never lose the delivery
        logger.exception("Processing webhook delivery %s failed", delivery.pk)
        update.update(status=WebhookDelivery.Status.FAILED, last_error=_describe(exc))
    else:
        if charge is None:
            update["status"] = WebhookDelivery.Status.IGNORED
        else:
            update.update(status=WebhookDelivery.Status.PROCESSED, charge=charge)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(**update)
    return str(update["status"])


def _apply(delivery: WebhookDelivery, payload: dict[str, Any]) -> Any:
    event = str(payload.get("event") or "")
    if not event.startswith("charge_"):
        logger.info("Webhook event %r recorded and ignored", event)
        return None
    data = payload.get("data")
    if not isinstance(data, dict):
        raise MalformedDelivery(gettext("A charge event without a charge in 'data'."))
    try:
        # The tolerant reader: only the charge's id must be usable; an odd store id
        # is unknown, and the charge's own row or the account's store is used instead.
        named = parse_charge(data)
    except ShapeError:
        raise MalformedDelivery(
            gettext("The charge id in 'data' is missing or not a UUID.")
        ) from None
    try:
        return refresh_charge(named.id, named.store_id, account=delivery.account)
    except NotFoundError:
        raise MalformedDelivery(
            gettext("The gateway does not know the charge this delivery names (not ours?).")
        ) from None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def pending_deliveries(*, failed: bool = False, before: datetime | None = None) -> list[int]:
    """Deliveries waiting to be processed (and failed ones to retry, with ``failed``).

    ``before``: only those received (failed ones: last tried) before then, so a
    periodic sweep leaves alone what a worker is about to take.
    """
    waiting = Q(status=WebhookDelivery.Status.RECEIVED)
    retry = Q(status=WebhookDelivery.Status.FAILED, attempts__lt=MAX_ATTEMPTS)
    if before is not None:
        waiting &= Q(received_at__lt=before)
        retry &= Q(processed_at__lt=before)
    query = WebhookDelivery.objects.filter(waiting | retry if failed else waiting)
    return list(query.order_by("received_at").values_list("pk", flat=True))


def prune_deliveries(*, older_than_days: int) -> int:
    """Delete deliveries received more than ``older_than_days`` ago; returns how many."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    deleted, _ = WebhookDelivery.objects.filter(received_at__lt=cutoff).delete()
    return deleted
