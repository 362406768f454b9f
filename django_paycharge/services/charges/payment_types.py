"""Fill in the payment type of charges a bulk sync stored without it.

A charge does not carry the payment type of its transaction token, and a list
page must not cost one extra request per charge. :func:`fill_payment_types`
reads each distinct token once and remembers the answer in
:class:`~django_paycharge.models.TransactionTokenInfo`:

- a known payment type fills every charge of that token, now and later
  (a recurring token pays for many charges; later ones cost no request);
- a 404 is recorded and never asked again;
- any other failure moves the token to the back of the queue: tokens never
  tried come first, then failed ones, least recently tried first, so one bad
  token can never stall the rest;
- the window is ordered (by token id), so successive runs make progress
  instead of re-reading an arbitrary sample.

``paycharge_periodic`` runs it after every sync (its ``payment_types``
step); ``paycharge_sync --fill-payment-types N`` runs it from the command line.
A new charge is stored without its payment type too (the customer should not
wait for a second request at the checkout): with a task backend, a fill is
woken for it (:func:`fill_later`: this flow's own task, sent here). What needs the type at once asks
:func:`known_payment_type`, which reads that one token now.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from django.db.models import F, QuerySet
from django.utils import timezone

from ... import conf
from ...exceptions import AuthenticationError, NotFoundError, PayChargeError
from ...models import Charge, TransactionTokenInfo
from ...queue import (
    background_enabled,
    background_task,
    database_backend,
    routed_task,
    task_waiting,
)
from ..clients import get_client

logger = logging.getLogger("django_paycharge.services")
task_logger = logging.getLogger("django_paycharge.tasks")

#: Tokens read per batch; one UPDATE per payment type and batch fills the charges.
BATCH = 100
#: Failed reads in a row after which a run stops: the gateway is in trouble.
MAX_FAILURES_IN_A_ROW = 3

State = TransactionTokenInfo.State


def fill_later(charge: Charge) -> None:
    """Have ``charge``'s payment type read in the background, off the caller's path.

    Without a task backend the periodic step fills it (and :func:`known_payment_type`
    reads it when needed at once). Never raises: the charge is stored either way.
    """
    if charge.transaction_token_id is None:
        return
    try:
        wake_fill()
    except Exception:  # a broker that is down: the periodic step fills it later
        logger.exception("Payment type of charge %s: no background fill woken", charge.gateway_id)


def known_payment_type(charge: Charge) -> str:
    """``charge``'s payment type: as stored, or read from its transaction token now (and stored).

    For what needs it at once (which page a customer goes to after paying);
    a token read before costs no request. Sets ``charge.payment_type``, and
    fills every charge of the token. "" when the charge names no token (or no
    store to read it in); the gateway's errors are raised
    (:class:`~django_paycharge.exceptions.PayChargeError`).
    """
    token_id = charge.transaction_token_id
    if charge.payment_type or token_id is None:
        return charge.payment_type
    account = charge.account
    known = TransactionTokenInfo.objects.filter(
        account=account, token_id=token_id, state=State.KNOWN
    )
    payment_type = known.values_list("payment_type", flat=True).first()
    if payment_type is None:
        store = charge.store_id or conf.get_account(account).store_id
        if store is None:
            return ""
        try:
            token = get_client(account).tokens.retrieve(store, token_id)
        except NotFoundError:
            _record(account, token_id, store, State.NOT_FOUND)
            raise
        payment_type = (token.payment_type or "")[:32]
        _record(
            account, token_id, store, State.KNOWN if payment_type else State.FAILED, payment_type
        )
    if payment_type:
        _fill(account, {token_id: payment_type})
        charge.payment_type = payment_type
    return payment_type


def fill_payment_types(account: str | None = None, *, limit: int = 500) -> int:
    """Read up to ``limit`` distinct transaction tokens; returns how many charges were filled."""
    name = account or conf.DEFAULT_ACCOUNT
    filled = _apply_known(name)
    queue = _queue(name, limit)
    if not queue:
        return filled
    client = get_client(name)
    fallback_store = conf.get_account(name).store_id
    failures = 0
    for start in range(0, len(queue), BATCH):
        learned: dict[uuid.UUID, str] = {}
        for token_id, store_id in queue[start : start + BATCH]:
            store = store_id or fallback_store
            if store is None:
                continue  # no path to read it by: left for when a store is known
            try:
                token = client.tokens.retrieve(store, token_id)
            except NotFoundError:
                _record(name, token_id, store, State.NOT_FOUND)
                logger.warning("Transaction token %s is not on the gateway", token_id)
                continue
            except AuthenticationError:
                raise  # every read would fail the same way: say so
            except PayChargeError as exc:
                _record(name, token_id, store, State.FAILED)
                failures += 1
                logger.info("Token %s not read now: %s", token_id, type(exc).__name__)
                if failures >= MAX_FAILURES_IN_A_ROW:
                    return filled + _fill(name, learned)
                continue
            failures = 0
            payment_type = (token.payment_type or "")[:32]
            _record(
                name, token_id, store, State.KNOWN if payment_type else State.FAILED, payment_type
            )
            if payment_type:
                learned[token_id] = payment_type
        filled += _fill(name, learned)
    return filled


def _missing(account: str) -> QuerySet[Charge]:
    return Charge.objects.filter(
        account=account, payment_type="", transaction_token_id__isnull=False
    )


def _queue(account: str, limit: int) -> list[tuple[uuid.UUID, uuid.UUID | None]]:
    """Up to ``limit`` (token, store) pairs to read: never tried first, then failed ones."""
    infos = TransactionTokenInfo.objects.filter(account=account)
    tried = infos.values("token_id")
    fresh = _missing(account).exclude(transaction_token_id__in=tried)
    pairs = _distinct_tokens(
        fresh.order_by("transaction_token_id")
        .values_list("transaction_token_id", "store_id")
        .iterator(chunk_size=1000),
        limit,
    )
    if len(pairs) < limit:
        waiting = _missing(account).values("transaction_token_id")
        retry = infos.filter(state=State.FAILED, token_id__in=waiting).order_by("checked_at")
        for token_id, store_id in retry.values_list("token_id", "store_id")[: limit - len(pairs)]:
            pairs.append((token_id, store_id))
    return pairs


def _distinct_tokens(
    rows: Iterable[tuple[uuid.UUID | None, uuid.UUID | None]], limit: int
) -> list[tuple[uuid.UUID, uuid.UUID | None]]:
    # One pair per token, with a store when any of its charges has one. (PostgreSQL
    # has no max() of a UUID, so this is done here rather than by an aggregate.)
    stores: dict[uuid.UUID, uuid.UUID | None] = {}
    for token_id, store_id in rows:
        assert token_id is not None  # filtered by _missing
        if token_id not in stores:
            if len(stores) >= limit:
                break
            stores[token_id] = store_id
        elif stores[token_id] is None:
            stores[token_id] = store_id
    return list(stores.items())


def _record(
    account: str,
    token_id: uuid.UUID,
    store_id: uuid.UUID,
    state: str,
    payment_type: str = "",
) -> None:
    values = {"store_id": store_id, "state": state, "payment_type": payment_type}
    values["checked_at"] = timezone.now()
    updated = TransactionTokenInfo.objects.filter(account=account, token_id=token_id).update(
        attempts=F("attempts") + 1, **values
    )
    if not updated:
        TransactionTokenInfo.objects.get_or_create(
            account=account, token_id=token_id, defaults={**values, "attempts": 1}
        )


def _fill(account: str, learned: dict[uuid.UUID, str]) -> int:
    by_type: dict[str, list[uuid.UUID]] = {}
    for token_id, payment_type in learned.items():
        by_type.setdefault(payment_type, []).append(token_id)
    return sum(
        _missing(account).filter(transaction_token_id__in=ids).update(payment_type=payment_type)
        for payment_type, ids in by_type.items()
    )


def _apply_known(account: str) -> int:
    """Fill charges whose token was read before (a new charge of a recurring token): no request."""
    known = TransactionTokenInfo.objects.filter(
        account=account,
        state=State.KNOWN,
        token_id__in=_missing(account).values("transaction_token_id"),
    )
    return _fill(account, dict(known.values_list("token_id", "payment_type")))


@background_task
def fill_payment_types_task(account: str | None = None, limit: int = 500) -> int:
    """Fill in the payment type of up to ``limit`` tokens' charges; returns how many."""
    return fill_payment_types(account, limit=limit)


@background_task
def fill_new_payment_types_task(limit: int = 100) -> int:
    """Fill in the payment type of new charges, every account's; woken after creates."""
    return fill_new_payment_types(limit)


def fill_new_payment_types(limit: int = 100) -> int:
    """Fill in the payment type of new charges, every account's; how many."""
    filled = 0
    for name in conf.account_names():
        try:
            filled += fill_payment_types(name, limit=limit)
        except PayChargeError as exc:  # one account's gateway trouble stops not the others
            task_logger.warning("Payment types of account %s not filled: %s", name, exc)
    return filled


def wake_fill() -> None:
    """After a create: a fill of new charges' payment types runs soon (inline: the periodic
    step's). On django-tasks-db, only when no such task is waiting already: one that has
    not started reads the charges after this one committed."""
    if not background_enabled():
        return
    task = routed_task(fill_new_payment_types_task)
    if database_backend(task) and task_waiting(task):
        return
    task.enqueue()
