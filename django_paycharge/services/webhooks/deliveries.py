"""Store webhook deliveries exactly once, then process them against the gateway's state.

Processing never trusts the body's state: for a charge event it re-reads the
charge from the gateway and upserts it, so repeated or out-of-order
deliveries all end in the gateway's current state.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import router, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from ... import observe, outbox, signals
from ...client import ShapeError, parse_charge, parse_subscription, parse_transaction_token
from ...client.subscription_vocabulary import SUBSCRIPTION_EVENTS
from ...client.token_vocabulary import TOKEN_EVENTS
from ...exceptions import NotFoundError, PayChargeError
from ...models import Charge, WebhookDelivery
from ..mirror import (
    insert_once,
    refresh_charge,
    refresh_latest_charge,
    refresh_saved_card,
    refresh_subscription,
    store_saved_card,
)
from ..sync import LIFECYCLE_EVENTS, apply_lifecycle_event
from .body import MalformedDelivery, read_payload, storable, storable_value

logger = logging.getLogger("django_paycharge.webhooks")

_DROPPED_HEADERS = {"authorization", "cookie", "proxy-authorization"}
MAX_ATTEMPTS = outbox.MAX_ATTEMPTS
#: The fields of the unique constraint that keeps one row per delivery.
_ONCE = ("account", "dedupe_key")
#: What process_delivery returns besides a status: another worker holds a live claim.
BUSY = "busy"
#: ... and when there is no such delivery.
MISSING = "missing"


def store_delivery(
    *,
    body: bytes,
    headers: Mapping[str, str],
    account: str,
    problem: str = "",
) -> tuple[WebhookDelivery, bool]:
    """Store a genuine delivery once. Returns ``(delivery, created)``.

    A repeat (same account, and same delivery id, or same event and body when
    there is no id) returns the stored row with ``created`` False. ``problem``
    marks a delivery already known to be unusable (too large). Any body is
    stored: one that is not a JSON object, or is nested too deeply to read, is
    stored as failed with the reason.

    The row is committed when this returns (one statement, outside any
    transaction; with ``webhook_received`` announced in the same one): whoever
    processes it next can see it.
    """
    text = storable(body.decode("utf-8", errors="replace"))
    event, delivery_id, problem = _identity(text, problem)
    values = _row_values(
        account=account,
        event=event,
        delivery_id=delivery_id,
        dedupe_key=_dedupe_key(event, delivery_id, body),
        text=text,
        headers=headers,
        problem=problem,
    )
    if signals.webhook_received.has_listeners(WebhookDelivery):
        # Announced with the row: one transaction (only when someone listens: the
        # receipt's cost is one statement otherwise).
        alias = router.db_for_write(WebhookDelivery)
        with transaction.atomic(using=alias):
            pk = insert_once(WebhookDelivery, values, conflict=_ONCE)
            if pk is not None:
                delivery = WebhookDelivery(pk=pk, **values)
                outbox.send(
                    signals.webhook_received, sender=WebhookDelivery, using=alias, delivery=delivery
                )
    else:
        pk = insert_once(WebhookDelivery, values, conflict=_ONCE)
    if pk is None:
        found = WebhookDelivery.objects.get(account=account, dedupe_key=values["dedupe_key"])
        return found, False
    # Stored (and committed) whatever a receiver does: a failing one is run again
    # later, never turned into an error answer that would make the gateway retry.
    return WebhookDelivery(pk=pk, **values), True


def _identity(text: str, problem: str) -> tuple[str, str | None, str]:
    """The delivery's ``(event, delivery id, problem)`` read from its body.

    A body already known to be unusable is not read; one that is not a JSON
    object gets its reason as the problem, and no event or id.
    """
    if problem:
        return "", None, problem
    try:
        payload = read_payload(text)
    except MalformedDelivery as exc:
        return "", None, str(exc)
    event = storable_value(str(payload.get("event") or ""))[:64]
    raw_id = payload.get("id")
    delivery_id = (
        storable_value(str(raw_id))[:64] if isinstance(raw_id, str | int) and raw_id else None
    )
    return event, delivery_id, problem


def _dedupe_key(event: str, delivery_id: str | None, body: bytes) -> str:
    """What makes two deliveries the same: the gateway's id, else the event and the exact body."""
    if delivery_id:
        return f"id:{delivery_id}"
    return "sha256:" + hashlib.sha256(event.encode() + b"\0" + body).hexdigest()


def _row_values(
    *,
    account: str,
    event: str,
    delivery_id: str | None,
    dedupe_key: str,
    text: str,
    headers: Mapping[str, str],
    problem: str,
) -> dict[str, Any]:
    """The stored row's columns; credentials and cookies are not kept from the headers."""
    values: dict[str, Any] = {
        "account": account,
        "event": event,
        "delivery_id": delivery_id,
        "dedupe_key": dedupe_key,
        "body": text,
        "headers": {
            k: storable(v) for k, v in headers.items() if k.lower() not in _DROPPED_HEADERS
        },
        "received_at": timezone.now(),
    }
    if problem:
        values.update(status=WebhookDelivery.Status.FAILED, last_error=problem)
    return values


def process_delivery(
    delivery_pk: int,
    *,
    retry_failed: bool = False,
    force: bool = False,
    by: str = "",
    on_claimed: Callable[[WebhookDelivery], object] | None = None,
) -> str:
    """Claim and process one stored delivery; returns its status afterwards.

    A delivery waiting, or stuck (its last claim's lease ran out), is taken;
    ``retry_failed`` also takes a failed one, ``force`` any one no live claim
    holds. Otherwise it is left alone and its status returned: ``"busy"``
    when another worker holds a live claim on it, ``"missing"`` when there
    is no such delivery. Errors are recorded on the delivery, not raised: the
    caller (a view, a task, a command) must never fail because of one.
    ``by`` names the claimant (see :func:`django_paycharge.outbox.claimant`); ``on_claimed`` is
    called with the claimed delivery before it is processed.
    """
    by = by or outbox.claimant("process_delivery")
    delivery = outbox.claim(delivery_pk, by=by, retry_failed=retry_failed, force=force)
    if delivery is None:
        return current_status(delivery_pk)
    if on_claimed is not None:
        on_claimed(delivery)
    return process_claimed(delivery)


def current_status(delivery_pk: int) -> str:
    """A delivery's status, ``"busy"`` while a live claim holds it, or ``"missing"``."""
    row = WebhookDelivery.objects.filter(pk=delivery_pk).only("status", "lease_until").first()
    if row is None:
        return MISSING
    if row.status == WebhookDelivery.Status.PROCESSING and not row.is_stuck():
        return BUSY
    return str(row.status)


@observe.traced("paycharge.webhook.process", lambda delivery: {"delivery": str(delivery.pk)})
def process_claimed(delivery: WebhookDelivery) -> str:
    """Process a delivery this process has claimed (see :mod:`.leases`); its status afterwards."""
    update: dict[str, Any] = {"processed_at": timezone.now(), "last_error": ""}
    try:
        payload = read_payload(delivery.body)
        charge = _apply(delivery, payload)
    except (MalformedDelivery, PayChargeError) as exc:
        update.update(status=WebhookDelivery.Status.FAILED, last_error=_describe(exc))
    except Exception as exc:  # a receiver of our signals failed: record it, never lose the delivery
        logger.exception("Processing webhook delivery %s failed", delivery.pk)
        update.update(status=WebhookDelivery.Status.FAILED, last_error=_describe(exc))
    except BaseException:  # shutting down: give the claim back, someone takes it at once
        outbox.release(delivery)
        raise
    else:
        if charge is None:
            update["status"] = WebhookDelivery.Status.IGNORED
        else:  # a subscription event's result is the subscription: no charge to link
            linked = charge if isinstance(charge, Charge) else None
            update.update(status=WebhookDelivery.Status.PROCESSED, charge=linked)
    if not outbox.finish(delivery, **update):
        logger.warning(
            "Webhook delivery %s: the lease ran out while it was processed and another run "
            "took it over; its result is the one kept",
            delivery.pk,
        )
        return current_status(delivery.pk)
    return str(update["status"])


def _apply(delivery: WebhookDelivery, payload: dict[str, Any]) -> Any:
    event = str(payload.get("event") or "")
    if event in LIFECYCLE_EVENTS:  # refund_finished, cancel_finished
        return apply_lifecycle_event(delivery.account, event, payload.get("data"))
    if event in SUBSCRIPTION_EVENTS:
        return _subscription_event(delivery.account, event, payload.get("data"))
    if event in TOKEN_EVENTS:
        return _token_event(delivery.account, payload.get("data"))
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


def _subscription_event(account: str, event: str, data: Any) -> Any:
    """A ``subscription_*`` event: the subscription it names is read again and mirrored
    (the body is never trusted; a stale or repeated event changes nothing); after a
    payment or a failure, its newest charge too (the renewal's), which the delivery links."""
    if not isinstance(data, dict):
        raise MalformedDelivery(gettext("A subscription event without a subscription in 'data'."))
    try:
        named = parse_subscription(data)
    except ShapeError:
        raise MalformedDelivery(
            gettext("The subscription id in 'data' is missing or not a UUID.")
        ) from None
    try:
        subscription = refresh_subscription(named.id, named.store_id, account=account)
    except NotFoundError:
        raise MalformedDelivery(
            gettext("The gateway does not know the subscription this delivery names.")
        ) from None
    if event in _PAYMENT_EVENTS:
        return refresh_latest_charge(subscription) or subscription
    return subscription


_PAYMENT_EVENTS = frozenset({"subscription_payment", "subscription_failure"})


def _token_event(account: str, data: Any) -> Any:
    """A ``token_*`` or ``recurring_token_deleted`` event: the token it names is read again
    and mirrored (the body is never trusted; a stale or repeated event changes nothing). A
    token the gateway no longer knows is mirrored as inactive: deleted."""
    if not isinstance(data, dict):
        raise MalformedDelivery(gettext("A token event without a token in 'data'."))
    try:
        named = parse_transaction_token(data)
    except ShapeError:
        raise MalformedDelivery(
            gettext("The token id in 'data' is missing or not a UUID.")
        ) from None
    try:
        return refresh_saved_card(named.id, named.store_id, account=account)
    except NotFoundError:
        # Known to be gone: only that is taken from the (authenticated) body.
        return store_saved_card(named, account=account, gone=True)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def pending_deliveries(*, failed: bool = False, before: datetime | None = None) -> list[int]:
    """Deliveries to process: waiting, stuck (lease ran out), and failed ones with ``failed``.

    ``before``: only waiting ones received (failed ones: last tried) before
    then, so a periodic sweep leaves alone what a worker is about to take.
    Stuck ones are included whatever their age (their lease already says
    their worker is gone); those whose every attempt died are left failed
    first (see :func:`django_paycharge.outbox.give_up_exhausted`).
    """
    now = timezone.now()
    outbox.give_up_exhausted(now)
    waiting = Q(status=WebhookDelivery.Status.RECEIVED)
    retry = Q(status=WebhookDelivery.Status.FAILED, attempts__lt=MAX_ATTEMPTS)
    if before is not None:
        waiting &= Q(received_at__lt=before)
        retry &= Q(processed_at__lt=before)
    query = waiting | (outbox.stuck(now) & Q(attempts__lt=MAX_ATTEMPTS))
    if failed:
        query |= retry
    pks = WebhookDelivery.objects.filter(query).order_by("received_at").values_list("pk", flat=True)
    return list(pks)


def prune_deliveries(*, older_than_days: int) -> tuple[int, int]:
    """Delete finished deliveries received more than ``older_than_days`` ago.

    Returns ``(deleted, kept)``: deliveries not processed yet (waiting, or
    claimed) are kept whatever their age, since deleting one would lose it.
    """
    cutoff = timezone.now() - timedelta(days=older_than_days)
    old = WebhookDelivery.objects.filter(received_at__lt=cutoff)
    unfinished = [WebhookDelivery.Status.RECEIVED, WebhookDelivery.Status.PROCESSING]
    deleted, _ = old.exclude(status__in=unfinished).delete()
    return deleted, old.filter(status__in=unfinished).count()
