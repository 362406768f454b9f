"""A committed charge request's life: asked with its key until the gateway's answer is known.

The outcome of a create is never guessed. A refusal (a 4xx that is not "try
again") is final; a charge is stored; anything else (time-outs, dropped
connections, 5xx, 429, ``IDEMPOTENCY_KEY_IN_PROGRESS``) means "unknown", and
the request is asked again with the same key. A request is only ever sent
while its row says ``pending`` or ``unknown``: moving it to ``abandoned`` is a
promise, kept by the database, that it is never sent again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from secrets import SystemRandom
from typing import Any

from django.db import DatabaseError, router
from django.db.models import F
from django.utils import timezone

from .. import conf, observe, signals
from ..client import IN_PROGRESS_CODE, PayChargeClient
from ..client.types import Charge as RemoteCharge
from ..exceptions import (
    APIError,
    InvalidParametersError,
    PayChargeError,
    RateLimitError,
    ServerError,
    error_class_for_status,
)
from ..models import Charge, ChargeRequest
from .charges import store_remote_charge, transaction_token_payment_type
from .clients import get_client
from .retry import retry_transient

logger = logging.getLogger("django_paycharge.services")

State = ChargeRequest.State
_OPEN = ChargeRequest.OPEN_STATES
# Answers that do not say whether the gateway did the work (or say "not yet").
_UNKNOWN_STATUSES = frozenset({408, 425, 429})
_jitter = SystemRandom()


def is_refusal(exc: PayChargeError) -> bool:
    """True when the gateway's answer says it did not, and will not, create this charge."""
    if isinstance(exc, InvalidParametersError):
        return True  # refused before anything was sent
    if not isinstance(exc, APIError) or isinstance(exc, ServerError | RateLimitError):
        return False
    if exc.http_status in _UNKNOWN_STATUSES:
        return False
    return not (exc.http_status == 409 and exc.code == IN_PROGRESS_CODE)


@dataclass(frozen=True)
class Asked:
    """What asking the gateway with a request's key came to: exactly one field is set."""

    charge: Charge | None = None
    refused: PayChargeError | None = None
    unknown: PayChargeError | None = None
    #: Another process moved the request out of the open states first.
    settled: ChargeRequest | None = None


@observe.traced("paycharge.charge_request", lambda r, **_: {"charge_request": request_name(r)})
def ask_gateway(request: ChargeRequest, *, budget: float) -> Asked:
    """Send ``request`` with its key; while the answer is unknown, ask again for ``budget`` s.

    Each round is the client's own attempt with its retries; rounds are spaced by
    the account's backoff. Nothing is sent once the row has left the open states.
    """
    client = get_client(request.account)
    account = conf.get_account(request.account)
    deadline = time.monotonic() + budget
    rounds = 0
    while True:
        if not _mark_sent(request):
            return Asked(settled=reload(request))
        try:
            remote = client.charges.create(
                **request.params, idempotency_key=str(request.idempotency_key)
            )
        except PayChargeError as exc:
            if is_refusal(exc):
                exc.outcome = "refused"
                _update(request, _OPEN, state=State.FAILED, error=error_record(exc, "refused"))
                logger.info(
                    "Charge request %s refused: %s", request_name(request), type(exc).__name__
                )
                return Asked(refused=exc)
            _update(request, (State.UNKNOWN,), error=error_record(exc, "unknown"))
            cap = min(account.retry_backoff_max, account.retry_backoff * 2**rounds)
            pause = cap * (0.5 + _jitter.random() / 2)
            rounds += 1
            if time.monotonic() + pause >= deadline:
                logger.warning(
                    "Charge request %s: outcome unknown after %d rounds (%s)",
                    request_name(request),
                    rounds,
                    type(exc).__name__,
                )
                return Asked(unknown=exc)
            time.sleep(pause)
            continue
        return Asked(charge=store_created(request, client, remote))


def refusal_from_record(error: Any) -> PayChargeError:
    """The refusal a failed request ended with, rebuilt from its stored record."""
    record = error if isinstance(error, dict) else {}
    status = record.get("http_status")
    cls = error_class_for_status(status) if isinstance(status, int) else APIError
    exc = cls(
        record.get("message") or None,
        http_status=status if isinstance(status, int) else None,
        code=record.get("code"),
        request_id=record.get("request_id"),
    )
    exc.outcome = "refused"
    return exc


def store_created(request: ChargeRequest, client: PayChargeClient, remote: RemoteCharge) -> Charge:
    """Store the charge the gateway made for ``request``; link them; send ``charge_created``.

    The write is retried through transient database errors (the gateway said yes:
    a locked SQLite file must not turn that into an error page). If the link to
    the request still fails, the charge is returned all the same and
    ``paycharge_recover`` links it later.
    """
    payment_type = transaction_token_payment_type(client, remote)
    try:
        charge = store_remote_charge(remote, account=request.account, payment_type=payment_type)
    except DatabaseError:
        logger.error(
            "Charge %s was created for request %s but could not be stored; "
            "paycharge_recover will store it.",
            remote.id,
            request_name(request),
        )
        _update(request, (*_OPEN, State.ABANDONED), charge_gateway_id=remote.id, quiet=True)
        raise

    link_charge(request, charge)
    return charge


def link_charge(request: ChargeRequest, charge: Charge) -> None:
    """Mark ``request`` succeeded with ``charge``; ``charge_created`` is sent once per request.

    A failing write is logged, not raised: the charge exists and is stored, and
    ``paycharge_recover`` links it later.
    """

    def link() -> None:
        moved = (
            ChargeRequest.objects.filter(pk=request.pk)
            .exclude(state=State.SUCCEEDED)
            .update(
                state=State.SUCCEEDED,
                charge=charge,
                charge_gateway_id=charge.gateway_id,
                gateway_request_id=observe.request_id("POST"),
                updated_at=timezone.now(),
            )
        )
        if moved:  # once per request, whoever stored it
            signals.send(signals.charge_created, sender=Charge, charge=charge, using=alias)

    alias = router.db_for_write(ChargeRequest)
    try:
        retry_transient(link, using=alias)
    except DatabaseError:
        logger.exception("Charge request %s not linked to its charge yet", request_name(request))


def find_remote_charge(request: ChargeRequest) -> Charge | None:
    """Look for a charge the gateway made for ``request`` (a read, never a create); store it.

    Charges of the request's transaction token with its amount and currency,
    made since shortly before the request and not already another request's.
    """
    params = request.params
    client = get_client(request.account)
    try:
        page = client.charges.list_page(
            transaction_token_id=params["transaction_token_id"], limit=10
        )
    except PayChargeError as exc:
        logger.info("Charges of request %s not read: %s", request_name(request), type(exc).__name__)
        return None
    since = request.created_at - timedelta(minutes=5)
    ids = [item.id for item in page.items]
    taken = set(
        ChargeRequest.objects.exclude(pk=request.pk)
        .filter(charge__gateway_id__in=ids)
        .values_list("charge__gateway_id", flat=True)
    )
    for remote in page.items:
        if remote.id in taken or not _matches(remote, params, since):
            continue
        logger.warning("Charge request %s: found its charge %s", request_name(request), remote.id)
        return store_created(request, client, remote)
    return None


def _matches(remote: RemoteCharge, params: dict[str, Any], since: Any) -> bool:
    if remote.requested_amount != params.get("amount"):
        return False
    if (remote.requested_currency or "").upper() != str(params.get("currency", "")).upper():
        return False
    mtid = params.get("merchant_transaction_id")
    if mtid is not None and remote.merchant_transaction_id not in (None, mtid):
        return False
    return remote.created_on is None or remote.created_on >= since


def abandon(request: ChargeRequest, exc: PayChargeError | None, *, reason: str) -> bool:
    """Move an open request to ``abandoned`` (never sent again); False if it had left them."""
    record = error_record(exc, "unknown") if exc is not None else {"outcome": "unknown"}
    record["abandoned"] = reason
    if request.sent_at is None and request.attempts == 0:
        record["outcome"] = "not_charged"  # never sent: nothing can come of it
    moved = _update(request, _OPEN, state=State.ABANDONED, error=record)
    if moved:
        logger.warning(
            "Charge request %s abandoned (%s): it will never be sent again",
            request_name(request),
            reason,
        )
    return moved


def error_record(exc: PayChargeError, outcome: str) -> dict[str, Any]:
    """What a request keeps of the last error it met (never a secret: messages are ours)."""
    return {
        "type": type(exc).__name__,
        "message": exc.message,
        "http_status": exc.http_status,
        "code": exc.code,
        "request_id": exc.request_id,
        "outcome": outcome,
        "at": timezone.now().isoformat(),
    }


def _mark_sent(request: ChargeRequest) -> bool:
    """Record a send, only while the request is open: the gate that abandonment closes."""
    now = timezone.now()
    moved = _update(request, _OPEN, state=State.UNKNOWN, attempts=F("attempts") + 1, sent_at=now)
    if moved:
        request.sent_at = now
    return moved


def _update(
    request: ChargeRequest, states: tuple[str, ...], *, quiet: bool = False, **values: Any
) -> bool:
    """One conditional UPDATE of ``request`` (while in ``states``), retried through busy errors."""
    values.setdefault("updated_at", timezone.now())

    def write() -> int:
        return ChargeRequest.objects.filter(pk=request.pk, state__in=states).update(**values)

    try:
        return bool(retry_transient(write, using=router.db_for_write(ChargeRequest)))
    except DatabaseError:
        if not quiet:
            raise
        logger.exception("Charge request %s: bookkeeping write failed", request_name(request))
        return False


def reload(request: ChargeRequest) -> ChargeRequest:
    return ChargeRequest.objects.select_related("charge").get(pk=request.pk)


def request_name(request: ChargeRequest) -> str:
    return request.caller_key or str(request.idempotency_key)
