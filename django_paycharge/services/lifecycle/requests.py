"""Captures, cancels, refunds and metadata updates: requests committed under the charge's lock.

They are sent by the one machine of :mod:`.exactly_once`, like creates. What
is theirs is here: :class:`LifecycleKind` (what they share as kinds of that
machine) and :func:`act`, which commits a request before anything is sent,
under a lock on the charge row, in one short transaction:

1. the kind checks the charge as the mirror holds it (a refund's amount
   against what is left, every request not known to have failed counted:
   :func:`.refunds.refundable_amount`), and a new request (kind, charge,
   parameters, key) is inserted unless, in the same statement, a request is
   found that holds the caller's key or that is a capture, cancel or refund of
   the same charge still being sent;
2. when none was inserted (or the kind refused the charge), the request with
   the caller's key answers (the same key and the same arguments give the same
   result; other arguments are refused), and one still being sent makes this
   one wait (:class:`ChargeBusyError`, nothing sent): two processes never both
   send one.

The gateway is not read first: the mirror already holds what the webhooks, the
customer's return and earlier answers said, and the gateway refuses what it
will not do anyway. Only when the kind refuses on the mirror's word is the
charge read from the gateway, and checked again, before a refusal is told
(the mirror may be behind: a charge captured or paid since).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, cast

from django.db import IntegrityError, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model, Q
from django.utils import timezone
from django.utils.translation import gettext

from ...client import PayChargeClient
from ...client.validation import validate_idempotency_key
from ...client.vocabulary import INVALID_CHARGE_STATUS
from ...exceptions import (
    ActionOutcomeUnknownError,
    APIError,
    ChargeBusyError,
    ChargeStateError,
    IdempotencyKeyReusedError,
    PayChargeError,
    RequestAbandonedError,
)
from ...models import OPEN_REQUEST_STATES, Charge, ChargeActionRequest, RequestState
from ...models.compiled import Compiled
from ..clients import get_client
from ..mirror import Link, as_stored, insert_once, new_id, refresh_charge, store_of
from ..retry import retry_transient
from .exactly_once import answer, send
from .request_rows import request_name, succeed, succeed_statement

logger = logging.getLogger("django_paycharge.services")

#: How much earlier than its request the gateway may date a result (clocks differ).
CLOCK_SLACK = timedelta(minutes=5)


class LifecycleKind:
    """What captures, cancels, refunds and updates share as kinds of the machine."""

    name = ""
    nothing_done = "not_done"
    #: Where a succeeded request links what it made (``refund``, ``cancel``); None: the charge.
    link: str | None = None
    #: Kinds whose requests still being sent for the same charge make this one wait.
    blocked_by: frozenset[str] = frozenset()
    #: Refusals that may say an earlier send did the work: settled by reading.
    done_before_codes: frozenset[str] = frozenset()
    #: Refusals about the charge's status: told as :class:`ChargeStateError` after a read.
    status_codes: frozenset[str] = frozenset()
    #: Read the charge from the gateway, and check it again, before a refusal on the
    #: mirror's word (its status says what is allowed; the mirror may be behind).
    reads_first = True
    #: Whether :meth:`prepare` needs the charge's payment type: the read before a refusal
    #: then reads it from the charge's transaction token when the mirror does not know it.
    needs_payment_type = False

    def prepare(self, charge: Charge, given: dict[str, Any]) -> dict[str, Any]:
        """The parameters of a new request on ``charge``; raises to refuse it.

        Run on the charge as just read, then again under its lock.
        """
        raise NotImplementedError

    def state_error(self, status: str | None) -> ChargeStateError:
        """The error for a request the charge's ``status`` does not allow."""
        raise NotImplementedError

    # -- the machine's side (RequestKind) --------------------------------------------------

    def send(self, request: ChargeActionRequest) -> Any:
        raise NotImplementedError

    def find(self, request: ChargeActionRequest) -> Any | None:
        raise NotImplementedError

    def done_before(self, exc: APIError) -> bool:
        return exc.code in self.done_before_codes

    def stored(self, request: ChargeActionRequest) -> Any | None:
        if self.link is not None:
            return getattr(request, self.link)
        return Charge.objects.get(pk=request.charge_id)

    def refusal(self, request: ChargeActionRequest, exc: PayChargeError) -> PayChargeError:
        if not self._about_status(exc):
            return exc
        charge = request.charge
        try:  # the charge as it is now says why better than the code
            current = reread(charge).status
        except PayChargeError:
            current = Charge.objects.get(pk=charge.pk).status
        error = self.state_error(current)
        error.__cause__ = exc
        return error

    def _about_status(self, exc: PayChargeError) -> bool:
        if not isinstance(exc, APIError):
            return False
        reasons = {e.reason for e in exc.errors} | {exc.code}
        return exc.code in self.status_codes or INVALID_CHARGE_STATUS in reasons

    def unknown_error(
        self, request: ChargeActionRequest, exc: PayChargeError | None
    ) -> PayChargeError:
        return ActionOutcomeUnknownError(
            kind=self.name,
            idempotency_key=request.idempotency_key,
            request_id=exc.request_id if exc is not None else None,
        )

    def abandoned_error(self, request: ChargeActionRequest) -> PayChargeError:
        return RequestAbandonedError()

    def complete(self, request: ChargeActionRequest, result: Any) -> Any:
        """Mark ``request`` succeeded, linking ``result`` where the kind links one."""
        links = {self.link: result} if self.link is not None else {}
        succeed(request, **links)
        return result


def reread(charge: Charge, *, payment_type: bool = False) -> Charge:
    """The charge read again from the gateway (and stored); one request, unless
    ``payment_type`` asks for its payment type as well (see :func:`refresh_charge`)."""
    return refresh_charge(
        charge.gateway_id, charge.store_id, account=charge.account, payment_type=payment_type
    )


def act(
    kind: LifecycleKind,
    charge: Charge,
    *,
    given: dict[str, Any],
    idempotency_key: uuid.UUID | str | None,
    requested_by: str,
) -> Any:
    """What the request for ``idempotency_key`` made: an existing request's answer, or a
    new request's (committed, then sent). ``given``: the caller's arguments, checked.

    Must not run inside a transaction of the caller's.
    """
    if idempotency_key is not None:  # it travels in a header: refused before anything is kept
        idempotency_key = validate_idempotency_key(idempotency_key)
    try:
        request, new = open_request(kind, charge, given, idempotency_key, requested_by)
    except (ChargeBusyError, IdempotencyKeyReusedError):
        raise
    except PayChargeError:  # the kind refused the charge as the mirror holds it
        if not kind.reads_first:
            raise
        # The mirror may be behind the gateway: read the charge, then check it again.
        charge = reread(charge, payment_type=kind.needs_payment_type)
        request, new = open_request(kind, charge, given, idempotency_key, requested_by)
    return send(kind, request, recorded=True) if new else answer(kind, request)


def open_request(
    kind: LifecycleKind,
    charge: Charge,
    given: dict[str, Any],
    key: uuid.UUID | str | None,
    requested_by: str,
) -> tuple[ChargeActionRequest, bool]:
    """The committed request for ``key`` (new, or the one a concurrent call made with it),
    and whether this call made it.

    A new request is committed already saying it is being sent (``unknown``, its
    first send counted), as a create's is: the caller sends it at once, with no
    second write before the gateway is asked. A crash in between leaves it for
    ``paycharge_recover``, which sends it with its key.
    """
    text_key = str(key) if key is not None else str(uuid.uuid4())

    def open_or_join() -> tuple[ChargeActionRequest, bool]:
        locked = _locked(charge, alias)
        try:
            params = kind.prepare(locked, dict(given))  # raises to refuse it
        except PayChargeError:  # unless the key's holder answers, or another is being sent
            joined = join()
            if joined is None:
                raise
            return joined, False
        made = _insert(kind, locked, text_key, params, requested_by, alias)
        if made is not None:
            return made, True
        # Not inserted: the key is held, or another request is being sent (it may have
        # ended since the insert looked: it was still being sent then).
        joined = join()
        if joined is None:
            raise ChargeBusyError()
        return joined, False

    def join() -> ChargeActionRequest | None:
        return _join(kind, charge, given, text_key, alias)

    alias = router.db_for_write(ChargeActionRequest)
    try:
        return retry_transient(open_or_join, using=alias, durable=True)
    except IntegrityError:  # the same key, committed a moment ago for another charge
        existing = ChargeActionRequest.objects.get(idempotency_key=text_key)
        _refuse_other(existing, kind, charge, given)
        return existing, False


def _join(
    kind: LifecycleKind, charge: Charge, given: dict[str, Any], key: str, alias: str
) -> ChargeActionRequest | None:
    """The request that holds ``key`` (another call's, with the same arguments), if any;
    :class:`ChargeBusyError` while another that ``kind`` waits for is being sent."""
    holder = _holder_unless_busy(kind, charge, key, alias)
    if holder is None:
        return None
    related = ChargeActionRequest.objects.select_related("charge", "refund", "cancel")
    existing = related.get(pk=holder)
    _refuse_other(existing, kind, charge, given)
    return existing


def _insert(
    kind: LifecycleKind,
    locked: Charge,
    key: str,
    params: dict[str, Any],
    requested_by: str,
    alias: str,
) -> ChargeActionRequest | None:
    """The new request, inserted in one statement built once (as a create's is: see
    services/mirror/inserts.py), not by the ORM's insert; None, and nothing inserted,
    while a request holds ``key`` or one that ``kind`` waits for is being sent.

    That look is the insert's own (``INSERT ... SELECT ... WHERE NOT EXISTS``), run
    after the lock's statement: on PostgreSQL's READ COMMITTED a statement reads as
    of its start, so folded into the locking one it missed a request committed by
    the lock's holder (two staff refunding at once both sent theirs).
    """
    now = timezone.now()
    values: dict[str, Any] = {
        "kind": kind.name,
        "idempotency_key": key,
        "account": locked.account,
        "charge": locked.pk,
        "params": params,
        "requested_by": requested_by[:150],
        "state": RequestState.UNKNOWN,
        "attempts": 1,
        "sent_at": now,
        "created_at": now,
        "updated_at": now,
    }
    holding, holding_values = _holding(kind.blocked_by, locked.pk, key)
    pk = insert_once(
        ChargeActionRequest,
        values,
        conflict=("idempotency_key",),
        using=alias,
        unless=holding.statement(alias, *holding_values),
    )
    if pk is None:
        return None
    made: ChargeActionRequest = as_stored(
        ChargeActionRequest, pk, {**values, "charge": locked}, alias
    )
    return made


def _charge_columns() -> list[str]:
    return [field.attname for field in Charge._meta.concrete_fields]


#: The charge's row under its lock (compiled once: it is read with every request).
_LOCKING = Compiled(
    lambda pk: Charge.objects.select_for_update().filter(pk=pk).values_list(*_charge_columns())
)


def _locked(charge: Charge, alias: str) -> Charge:
    """``charge`` read again under its row's lock (on SQLite, the writer's lock holds it)."""
    rows = _LOCKING.rows(alias, charge.pk)
    if not rows:
        raise Charge.DoesNotExist(f"Charge {charge.pk} does not exist any more.")
    return Charge.from_db(alias, _charge_columns(), rows[0])


def _holder_unless_busy(kind: LifecycleKind, charge: Charge, key: str, alias: str) -> int | None:
    """The request that holds ``key``, if any; else :class:`ChargeBusyError` while another
    request of ``charge`` that ``kind`` waits for is being sent.

    Read under the charge's lock, after the lock's statement (see :func:`_insert`):
    only when a refusal or an insert that did not happen must be explained.
    """
    holding, values = _holding(kind.blocked_by, charge.pk, key)
    seen = holding.rows(alias, *values)
    holder = next((pk for pk, held in seen if held == key), None)
    if holder is None and seen:
        raise ChargeBusyError()
    return holder


def _holding(kinds: frozenset[str], pk: int, key: str) -> tuple[Compiled, tuple[Any, ...]]:
    """The query of the requests that hold ``key`` or, of the charge ``pk`` and of ``kinds``,
    are being sent (compiled once), and the values to run it with."""
    if not kinds:
        return _KEY_HOLDER, (key,)
    compiled = _HOLDERS.get(kinds)
    if compiled is None:

        def build(pk: int, key: str) -> Any:
            sending = Q(charge=pk, kind__in=sorted(kinds), state__in=OPEN_REQUEST_STATES)
            found = ChargeActionRequest.objects.filter(sending | Q(idempotency_key=key))
            return found.values_list("pk", "idempotency_key")

        compiled = _HOLDERS[kinds] = Compiled(build)
    return compiled, (pk, key)


_HOLDERS: dict[frozenset[str], Compiled] = {}
_KEY_HOLDER = Compiled(
    lambda key: ChargeActionRequest.objects.filter(idempotency_key=key).values_list(
        "pk", "idempotency_key"
    )
)


def _refuse_other(
    existing: ChargeActionRequest, kind: LifecycleKind, charge: Charge, given: dict[str, Any]
) -> None:
    same = all(existing.params.get(k) == v for k, v in given.items())
    if existing.kind != kind.name or existing.charge_id != charge.pk or not same:
        raise IdempotencyKeyReusedError(
            gettext(
                "This idempotency key was already used for a different request; "
                "use a new key for a new capture, cancel or refund."
            )
        )


def find_made(
    kind: LifecycleKind,
    request: ChargeActionRequest,
    remotes: Iterable[Any],
    matches: Callable[[Any], bool],
    store: Callable[..., Any],
) -> Any | None:
    """Of the charge's refunds or cancels (``remotes``, as read), the one made for ``request``.

    One dated since shortly before the request, that ``matches`` it and that
    no other request of the charge has already: stored, linked and returned.
    """
    link = kind.link
    assert link is not None
    taken = set(
        ChargeActionRequest.objects.filter(charge_id=request.charge_id, kind=kind.name)
        .exclude(pk=request.pk)
        .exclude(**{f"{link}__isnull": True})
        .values_list(f"{link}__gateway_id", flat=True)
    )
    since = request.created_at - CLOCK_SLACK
    for remote in remotes:
        if remote.id in taken or (remote.created_on is not None and remote.created_on < since):
            continue
        if matches(remote):
            logger.warning("%s request %s: found its %s", kind.name, request_name(request), link)
            return kind.complete(request, store(remote, charge=request.charge))
    return None


def send_child(
    kind: LifecycleKind,
    request: ChargeActionRequest,
    resource: Callable[[PayChargeClient], Any],
    store: Callable[..., Any],
    *,
    after_reread: Callable[[], object] | None = None,
    linked: bool = False,
) -> Any:
    """Send a refund or cancel (``resource``: ``client.refunds`` or ``client.cancels``) with
    the request's key, store the answer with ``store(answer, charge=...)`` and link it.

    The answer is the state: a refund's ``pending`` is stored as it is, and its
    end comes with ``refund_finished`` (or a sync). A cancel, which changes the
    charge too, reads a ``pending`` answer once more: ``after_reread`` runs (the
    charge read again) before it is stored. ``linked``: ``store`` takes the request's
    :func:`completion` as ``link`` (a refund: on PostgreSQL, one statement with its row).
    """
    charge = request.charge
    operations = resource(get_client(request.account))
    store_id = store_of(charge)
    made = operations.create(
        store_id, charge.gateway_id, **request.params, idempotency_key=request.idempotency_key
    )
    if linked:  # the store marks the request done itself, with the row where it can
        stored = store(made, charge=charge, link=completion(kind, request))
    else:
        stored = kind.complete(request, store(made, charge=charge))
    if stored.status == "pending" and after_reread is not None:
        try:
            again = operations.retrieve(store_id, charge.gateway_id, made.id)
            after_reread()
            stored = store(again, charge=charge)
        except PayChargeError as exc:
            logger.info("%s %s not re-read: %s", kind.link, made.id, type(exc).__name__)
    return stored


def completion(kind: LifecycleKind, request: ChargeActionRequest) -> Link:
    """``request`` marked done with the row it made (``kind.link``), as :meth:`complete`
    does, and the same write as a statement that takes the row's id from an insert."""
    assert kind.link is not None
    link = kind.link
    made = cast(type[Model], ChargeActionRequest._meta.get_field(link).related_model)

    def statement(connection: BaseDatabaseWrapper, alias: str) -> tuple[str, list[Any]]:
        expressions = ((link, new_id(made)),)
        return succeed_statement(request, {link: None}, connection, alias, expressions=expressions)

    return Link(lambda row: kind.complete(request, row), statement)
