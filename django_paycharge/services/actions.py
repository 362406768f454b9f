"""Captures, cancels and refunds exactly once: a request row with its key, committed first.

The same pattern as :func:`~django_paycharge.services.create_charge`:

1. the request (kind, charge, parameters, idempotency key) is committed
   before anything is sent, under a lock on the charge row, so two clicks
   on "Refund" cannot both pass the check of what is left to refund;
2. it is sent with its key; the client retries a lost answer with the same
   key, and the gateway answers the first result instead of acting twice;
3. if the answer never comes, the row stays ``pending`` and
   ``paycharge_recover`` (or a call with the same key) resends it.

A caller's own ``idempotency_key`` (an API client's ``Idempotency-Key``)
names the request: the same key with the same parameters returns the same
result; with other parameters it is refused.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from .. import conf
from ..client import PayChargeClient
from ..exceptions import (
    APIError,
    ChargeStateError,
    ConflictError,
    IdempotencyKeyReusedError,
    PayChargeError,
    RateLimitError,
    ServerError,
    ServiceError,
)
from ..models import Charge, ChargeActionRequest
from .charge_requests import error_record
from .charges import refresh_charge
from .clients import get_client

logger = logging.getLogger("django_paycharge.services")

Kind = ChargeActionRequest.Kind
#: ``kind -> function(request) -> result`` sending one request; filled by the kind's module.
SENDERS: dict[str, Callable[[ChargeActionRequest], Any]] = {}


def open_request(
    kind: str,
    charge: Charge,
    build: Callable[[Charge], dict[str, Any]],
    *,
    given: dict[str, Any],
    idempotency_key: uuid.UUID | str | None,
    requested_by: str = "",
) -> ChargeActionRequest:
    """The committed request for ``idempotency_key`` (new, or the one already made with it).

    ``build(locked_charge)`` returns the parameters of a new request; it runs
    under the charge row's lock, after the key was looked up, so defaults
    ("refund what is left") and limits are computed against every request
    committed before, and it raises to refuse. ``given`` are the arguments
    the caller gave, compared with an existing request of the same key.
    Must not run inside a transaction of the caller's.
    """
    key = str(idempotency_key) if idempotency_key is not None else str(uuid.uuid4())
    for _attempt in range(2):
        try:
            with transaction.atomic(durable=True):
                locked = Charge.objects.select_for_update().get(pk=charge.pk)
                existing = ChargeActionRequest.objects.filter(idempotency_key=key).first()
                if existing is not None:
                    _refuse_other(existing, kind, charge, given)
                    return existing
                return ChargeActionRequest.objects.create(
                    kind=kind,
                    idempotency_key=key,
                    account=charge.account,
                    charge=charge,
                    params=build(locked),
                    requested_by=requested_by[:150],
                )
        except IntegrityError:
            continue  # the same key committed by a concurrent call (SQLite): read it next time
    raise PayChargeError(gettext("The request could not be recorded; please try again."))


def existing_request(
    kind: str, charge: Charge, idempotency_key: uuid.UUID | str | None, given: dict[str, Any]
) -> ChargeActionRequest | None:
    """The request already made with this key, if any; refused if it was another request.

    Only the arguments the caller gave (``given``, None values left out) are
    compared: a repeated "refund what is left" must find the first refund,
    not compute a new remainder.
    """
    if idempotency_key is None:
        return None
    existing = (
        ChargeActionRequest.objects.filter(idempotency_key=str(idempotency_key))
        .select_related("charge", "refund", "cancel")
        .first()
    )
    if existing is not None:
        _refuse_other(existing, kind, charge, given)
    return existing


#: Where a request of each kind links what it made.
RESULT_LINKS = {Kind.CAPTURE: "charge", Kind.CANCEL: "cancel", Kind.REFUND: "refund"}


def act_once(
    kind: str,
    charge: Charge,
    *,
    given: dict[str, Any],
    idempotency_key: uuid.UUID | str | None,
    requested_by: str,
    prepare: Callable[[Charge], Callable[[Charge], dict[str, Any]]],
) -> Any:
    """What the request for ``idempotency_key`` made: the existing request's result, or a
    new request's (committed, then sent).

    For a new one the charge is read from the gateway first; ``prepare(fresh)``
    refuses what its status does not allow and returns the parameters' builder
    for :func:`open_request` (run under the charge's lock).
    """
    request = existing_request(kind, charge, idempotency_key, given)
    if request is None:
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        build = prepare(fresh)
        request = open_request(
            kind,
            fresh,
            build,
            given=given,
            idempotency_key=idempotency_key,
            requested_by=requested_by,
        )
    return result_of(request, RESULT_LINKS[Kind(kind)])


def store_of(charge: Charge) -> uuid.UUID:
    """The charge's store (the account's default when the gateway did not say)."""
    store = charge.store_id or conf.get_account(charge.account).store_id
    if store is None:
        raise ServiceError(
            gettext("The charge's store is unknown: set PAYCHARGE['STORE_ID'] for its account.")
        )
    return uuid.UUID(str(store))


def _refuse_other(
    existing: ChargeActionRequest, kind: str, charge: Charge, given: dict[str, Any]
) -> None:
    same = all(existing.params.get(k) == v for k, v in given.items())
    if existing.kind != kind or existing.charge_id != charge.pk or not same:
        raise IdempotencyKeyReusedError(
            gettext(
                "This idempotency key was already used for a different request; "
                "use a new key for a new capture, cancel or refund."
            )
        )


def send_request(request: ChargeActionRequest) -> Any:
    """Send (or resend) a committed request with its key; returns what its kind returns.

    A refusal for good (4xx) marks it failed; a 409 is re-checked against the
    charge's fresh status and raised as :class:`ChargeStateError`. Trouble
    that a resend may cure (network, 5xx, 429) leaves it pending and raises.
    """
    ChargeActionRequest.objects.filter(pk=request.pk).update(attempts=F("attempts") + 1)
    try:
        return SENDERS[request.kind](request)
    except (ServerError, RateLimitError) as exc:
        record_error(request, exc, final=False)
        raise
    except ConflictError as exc:
        record_error(request, exc, final=True)
        charge = request.charge
        try:
            fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        except PayChargeError:
            raise exc from None
        raise refused(request.kind, fresh.status) from exc
    except APIError as exc:
        record_error(request, exc, final=True)
        raise
    except ChargeStateError as exc:  # the gateway accepted the request, then the charge failed
        record_error(request, exc, final=True)
        raise
    except PayChargeError as exc:
        record_error(request, exc, final=False)
        raise


def result_of(request: ChargeActionRequest, link: str) -> Any:
    """What a request made (``link``: "refund", "cancel" or "charge"): the stored result
    once it succeeded, else what sending (or resending) it now returns."""
    if request.state == ChargeActionRequest.State.SUCCEEDED:
        stored = getattr(request, link)
        if stored is not None:
            return stored
    return send_request(request)


def refused(kind: str, status: str | None) -> ChargeStateError:
    """The error for a capture, cancel or refund the charge's status does not allow."""
    messages = {
        Kind.CAPTURE: gettext("Only an authorized charge can be captured; its status is %(s)s."),
        Kind.CANCEL: gettext("This charge cannot be canceled in its status %(s)s."),
        Kind.REFUND: gettext("Only a successful charge can be refunded; its status is %(s)s."),
    }
    return ChargeStateError(
        messages[Kind(kind)] % {"s": status or gettext("unknown")}, status=status
    )


def succeeded(request: ChargeActionRequest, **links: Any) -> None:
    """Mark the request done (``refund=`` or ``cancel=`` links its result)."""
    ChargeActionRequest.objects.filter(pk=request.pk).update(
        state=ChargeActionRequest.State.SUCCEEDED, error=None, updated_at=timezone.now(), **links
    )


def send_operation(
    request: ChargeActionRequest,
    operations: Callable[[PayChargeClient], Any],
    store: Callable[..., Any],
    *,
    after_reread: Callable[[], object] | None = None,
) -> Any:
    """Send a refund or cancel request (``operations``: ``client.refunds`` or
    ``client.cancels``), store the answer with ``store(answer, charge=...)``, and mark
    the request done, linking the stored row.

    A ``pending`` answer is read once more (``after_reread`` runs before it is stored): the
    gateway often finishes at once, and one read spares the staff a stale "pending".
    """
    charge = request.charge
    link = RESULT_LINKS[Kind(request.kind)]
    resource = operations(get_client(request.account))
    store_id = store_of(charge)
    answer = resource.create(
        store_id, charge.gateway_id, **request.params, idempotency_key=request.idempotency_key
    )
    stored = store(answer, charge=charge)
    succeeded(request, **{link: stored})
    if stored.status == "pending":
        try:
            again = resource.retrieve(store_id, charge.gateway_id, answer.id)
            if after_reread is not None:
                after_reread()
            stored = store(again, charge=charge)
        except PayChargeError as exc:
            logger.info("%s %s not re-read: %s", link.capitalize(), answer.id, type(exc).__name__)
    return stored


def record_error(request: ChargeActionRequest, exc: PayChargeError, *, final: bool) -> None:
    """Keep the error on the request (the same record a charge request keeps); fail it if final.

    Final: the gateway refused it. Otherwise its outcome is unknown and it stays
    pending for the next send or ``paycharge_recover``.
    """
    error = error_record(exc, "refused" if final else "unknown")
    update: dict[str, Any] = {"error": error, "updated_at": timezone.now()}
    if final:
        update["state"] = ChargeActionRequest.State.FAILED
    ChargeActionRequest.objects.filter(pk=request.pk).update(**update)
    logger.warning(
        "%s request %s %s: %s",
        request.kind.capitalize(),
        request.idempotency_key,
        "failed" if final else "left pending",
        type(exc).__name__,
    )


def recover_action_requests(*, older_than: timedelta = timedelta(seconds=30)) -> dict[str, int]:
    """Settle captures, cancels and refunds left pending: resend each with its key."""
    cutoff = timezone.now() - older_than
    counts = {"settled": 0, "failed": 0, "still_pending": 0}
    pending = ChargeActionRequest.objects.filter(
        state=ChargeActionRequest.State.PENDING, created_at__lte=cutoff
    ).select_related("charge")
    for request in pending.order_by("created_at").iterator():
        try:
            send_request(request)
        except (ServerError, RateLimitError):
            counts["still_pending"] += 1
        except (APIError, ChargeStateError):
            counts["failed"] += 1
        except PayChargeError:
            counts["still_pending"] += 1
        else:
            counts["settled"] += 1
    return counts
