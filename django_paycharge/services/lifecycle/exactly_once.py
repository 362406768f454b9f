"""Every request that moves money, exactly once: one machine for every kind of request.

Create, capture, cancel, refund and metadata update all take this path; a kind
(:class:`RequestKind`) only says how to send its request, how to look for its
result by reads, and which refusals may say an earlier send already did it.
Each caller passes its kind with its request row; only recovery, which reads
rows of every kind, maps a row to its kind (its one table, ``services/recovery.py``).

1. The request row, with its idempotency key, is committed before anything is sent.
2. It is sent with its key, and the answer is classified here, once for every
   kind (:func:`outcome_of`): done (stored), refused for good (a 4xx refusal),
   not sent (it never left, or the gateway refused the shop's own settings:
   401, 403, an unknown store, a missing setting; only while no earlier send
   may have reached the gateway), or unknown (time-outs, dropped connections,
   5xx, 429, ``IDEMPOTENCY_KEY_IN_PROGRESS``, an answer that cannot be read).
3. Unknown is asked again with the same key for ``CREATE_SETTLE_SECONDS``.
4. Still unknown: looked for by reads; if not found, abandoned in the same
   statement that records why. A refusal that may mean an earlier send did
   the work (``ALREADY_CAPTURED``, a refund that now exceeds what is left) is
   settled by reading too, never recorded as refused on its word alone.

A request is only sent while its row says ``pending`` or ``unknown``: moving it
to ``abandoned`` is a promise, kept by the database, that it is never sent
again. Abandoned requests are looked for (``check``, ``paycharge_recover``)
until ``CHARGE_REQUEST_GRACE`` after their last send says nothing came of them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, Protocol, TypeVar, cast

from django.db.models import F
from django.utils import timezone

from ... import conf, observe
from ...client import IN_PROGRESS_CODE
from ...client.backoff import Backoff
from ...exceptions import (
    APIError,
    InvalidParametersError,
    PayChargeError,
    RateLimitError,
    ServerError,
)
from ...models import (
    OPEN_REQUEST_STATES,
    ChargeActionRequest,
    ChargeRequest,
    RequestState,
    SubscriptionRequest,
)
from .request_rows import (
    error_record,
    not_sent_from_record,
    refusal_from_record,
    reload,
    request_name,
    update_request,
)

logger = logging.getLogger("django_paycharge.services")

State = RequestState
DONE, REFUSED, UNKNOWN, NOT_SENT = "done", "refused", "unknown", "not_sent"
# Answers that do not say whether the gateway did the work (or say "not yet").
_UNKNOWN_STATUSES = frozenset({408, 425, 429})


#: A request row of the machine: a charge's create, a request on a charge made already, or
#: a subscription's create or change.
Row = TypeVar("Row", bound=ChargeRequest | ChargeActionRequest | SubscriptionRequest)
RowIn = TypeVar(
    "RowIn", bound=ChargeRequest | ChargeActionRequest | SubscriptionRequest, contravariant=True
)
#: What a kind's request makes (a charge, a refund, a cancel).
Result = TypeVar("Result")
ResultOut = TypeVar("ResultOut", covariant=True)


class RequestKind(Protocol[RowIn, ResultOut]):
    """What one kind of request adds to the machine (a strategy its callers pass in)."""

    #: ``create``, ``capture``, ``cancel``, ``refund`` or ``update``.
    @property
    def name(self) -> str: ...

    #: Recorded as an abandoned request's outcome once it is known that nothing came of it.
    @property
    def nothing_done(self) -> str: ...

    def send(self, request: RowIn) -> ResultOut:
        """Send the request with its key; store and link the result; return it (or raise)."""

    def find(self, request: RowIn) -> ResultOut | None:
        """Look for the request's result by reads only; store and link it when found.

        None when the reads found nothing; raises when they could not be made.
        """

    def done_before(self, exc: APIError) -> bool:
        """Whether this refusal may say that an earlier send already did the work."""

    def stored(self, request: RowIn) -> ResultOut | None:
        """The result of a request that succeeded (None when it cannot be had any more)."""

    def refusal(self, request: RowIn, exc: PayChargeError) -> PayChargeError:
        """The error a caller gets for the gateway's refusal ``exc``."""

    def unknown_error(self, request: RowIn, exc: PayChargeError | None) -> PayChargeError:
        """The error a caller gets when the outcome is unknown (``outcome == "unknown"``)."""

    def abandoned_error(self, request: RowIn) -> PayChargeError:
        """The error a caller gets for an abandoned request that did nothing."""


def outcome_of(exc: PayChargeError) -> str:
    """``refused`` (the gateway will not do it), ``not_sent`` (nothing was processed, and
    it is not the caller's doing: the request never left, or the gateway refused the
    shop's settings; see ``PayChargeError.owner_problem``) or ``unknown`` (it may have,
    or may still).

    A kind may mark its own error final by setting ``outcome = "refused"`` (a
    capture accepted, then the charge failed).
    """
    if exc.outcome == NOT_SENT:
        return NOT_SENT  # NotSentError, 401, 403, an unknown store, a missing setting
    if isinstance(exc, InvalidParametersError) or exc.outcome == REFUSED:
        return REFUSED  # refused before anything was sent, or by the kind after reading
    if not isinstance(exc, APIError) or isinstance(exc, ServerError | RateLimitError):
        return UNKNOWN  # network failures, unreadable answers, 5xx, 429
    if exc.http_status in _UNKNOWN_STATUSES:
        return UNKNOWN
    if exc.http_status == 409 and exc.code == IN_PROGRESS_CODE:
        return UNKNOWN
    return REFUSED


@dataclass(frozen=True)
class Asked(Generic[Row, Result]):
    """What asking the gateway with a request's key came to: exactly one field is set."""

    result: Result | None = None
    refused: PayChargeError | None = None
    unknown: PayChargeError | None = None
    #: Nothing was processed (:data:`NOT_SENT`): the request is ``not_sent``.
    not_sent: PayChargeError | None = None
    #: Another process moved the request out of the open states first (the row read again).
    settled: Row | None = None


def _scope(kind: RequestKind[Row, Result], request: Row, **_: object) -> dict[str, str]:
    return {"charge_request": request_name(request), "kind": kind.name}


@observe.traced("paycharge.charge_request", _scope)
def ask(
    kind: RequestKind[Row, Result], request: Row, *, budget: float, recorded: bool = False
) -> Asked[Row, Result]:
    """Send ``request`` with its key; while the answer is unknown, ask again for ``budget`` s.

    Each round is the client's own attempt with its retries; rounds are spaced by
    the account's back-off, half fixed so that a struggling gateway is not asked
    again at once. Nothing is sent once the row has left the open states.
    ``recorded``: the row was committed already saying it is being sent (a new
    request, made ``unknown`` with its first send counted): its first round
    sends without another write.
    """
    account = conf.get_account(request.account)
    backoff = Backoff(account.backoff_base, account.backoff_max, jitter="equal")
    deadline = time.monotonic() + budget
    rounds = 0
    while True:
        if recorded:
            recorded = False
        elif not _mark_sent(request):
            return Asked(settled=reload(request))
        try:
            return Asked(result=kind.send(request))
        except PayChargeError as exc:
            error = exc
        outcome = outcome_of(error)
        if outcome == NOT_SENT and (rounds or request.attempts > 1):
            outcome = UNKNOWN  # this send never left, but an earlier one may have
        if outcome == NOT_SENT:
            return _not_sent(request, kind, error)
        if outcome == REFUSED:
            try:
                return _refused(request, kind, error)
            except PayChargeError as unread:  # the refusal could not be checked by reading
                error = unread
        update_request(request, (State.UNKNOWN,), error=error_record(error, UNKNOWN))
        pause = backoff.delay(rounds)
        rounds += 1
        if time.monotonic() + pause >= deadline:
            logger.warning(
                "%s request %s: outcome unknown after %d rounds (%s)",
                kind.name.capitalize(),
                request_name(request),
                rounds,
                type(error).__name__,
            )
            return Asked(unknown=error)
        time.sleep(pause)


def _refused(
    request: Row, kind: RequestKind[Row, Result], exc: PayChargeError
) -> Asked[Row, Result]:
    """Record a refusal, unless reading shows the work was done; raises if it cannot read."""
    if isinstance(exc, APIError) and kind.done_before(exc):
        found = kind.find(request)  # the refusal may be about our own earlier send
        if found is not None:
            return Asked(result=found)
    refusal = kind.refusal(request, exc)
    refusal.outcome = REFUSED
    if not update_request(
        request, OPEN_REQUEST_STATES, state=State.FAILED, error=error_record(refusal)
    ):
        return Asked(settled=reload(request))
    logger.info("%s request %s refused: %s", kind.name, request_name(request), type(exc).__name__)
    return Asked(refused=refusal)


def _not_sent(
    request: Row, kind: RequestKind[Row, Result], exc: PayChargeError
) -> Asked[Row, Result]:
    """Record that nothing was processed: final, never asked about again by recovery."""
    record = error_record(exc, NOT_SENT)
    if not update_request(request, OPEN_REQUEST_STATES, state=State.NOT_SENT, error=record):
        return Asked(settled=reload(request))
    # The owner hears of their settings from the client's observer (services.problems).
    logger.warning(
        "%s request %s not sent (%s): nothing was done, it may be made again",
        kind.name.capitalize(),
        request_name(request),
        type(exc).__name__,
    )
    exc.outcome = NOT_SENT
    return Asked(not_sent=exc)


def send(kind: RequestKind[Row, Result], request: Row, *, recorded: bool = False) -> Result:
    """Send a committed request (asking again while unknown); abandon it if it stays unknown.

    Returns the result, or raises: the gateway's refusal (``outcome ==
    "refused"``, the request is ``failed``) or the kind's unknown-outcome
    error (the request is ``abandoned``, in the same statement that records
    why: never sent again). ``recorded``: see :func:`ask`.
    """
    budget = conf.get_seconds("CREATE_SETTLE_SECONDS")
    asked = ask(kind, request, budget=budget, recorded=recorded)
    if asked.refused is not None:
        raise asked.refused
    if asked.not_sent is not None:
        raise asked.not_sent
    if asked.settled is not None:
        return answer(kind, asked.settled)
    if asked.unknown is None:
        return cast(Result, asked.result)  # exactly one field is set: this one
    found = look_for(kind, request)  # a read: the answer may have been lost, not the work
    if found is not None:
        return found
    if not abandon(kind, request, asked.unknown, reason=kind.name):
        return answer(kind, reload(request))  # settled meanwhile by another process
    raise kind.unknown_error(request, asked.unknown) from asked.unknown


def answer(kind: RequestKind[Row, Result], request: Row) -> Result:
    """The answer for a request asked for again: its result, or the error it ended with.

    An open request is sent; an abandoned one is never sent, only looked for. A create
    that was not sent is sent again (nothing came of it); a capture, cancel, refund or
    update that was not sent raises its error again: make it anew, with a new key, so
    that the charge's checks (another in flight, what is left) are made again.
    """
    if request.state == State.NOT_SENT:
        if kind.name != "create":
            raise not_sent_from_record(request.error)
        update_request(request, (State.NOT_SENT,), state=State.PENDING, attempts=0)
        return answer(kind, reload(request))
    if request.state in OPEN_REQUEST_STATES:
        return send(kind, request)
    if request.state == State.SUCCEEDED:
        result = kind.stored(request)
        if result is not None:
            return result
    if request.state == State.FAILED:
        raise refusal_from_record(request.error)
    outcome, result = check(kind, request)
    if outcome == DONE:
        # None only when a succeeded request's result is gone from the mirror (as before).
        return cast(Result, result)
    if outcome == "nothing_done":
        raise kind.abandoned_error(request)
    raise kind.unknown_error(request, None)


def check(kind: RequestKind[Row, Result], request: Row) -> tuple[str, Result | None]:
    """A request's outcome as far as it can be known now (reads only), and its result.

    ``done``, ``refused``, ``not_sent`` (nothing was processed), ``pending`` (being
    sent, or recovery will send it),
    ``nothing_done`` (abandoned and nothing came of it) or ``unknown``
    (abandoned recently: the gateway may still finish it). An abandoned
    request is looked for; once ``CHARGE_REQUEST_GRACE`` has passed since it
    was last sent and nothing was found, that is recorded for good.
    """
    request = reload(request)
    if request.state == State.SUCCEEDED:
        return DONE, kind.stored(request)
    if request.state == State.FAILED:
        return REFUSED, None
    if request.state == State.NOT_SENT:
        return NOT_SENT, None
    if request.state in OPEN_REQUEST_STATES:
        return "pending", None
    error = request.error if isinstance(request.error, dict) else {}
    if error.get("outcome") == kind.nothing_done:
        return "nothing_done", None
    try:
        found = kind.find(request)
    except PayChargeError:
        return UNKNOWN, None  # not read: nothing may be concluded
    if found is not None:
        return DONE, found
    grace = timedelta(seconds=conf.get_seconds("CHARGE_REQUEST_GRACE"))
    now = timezone.now()
    if request.sent_at is not None and now < request.sent_at + grace:
        return UNKNOWN, None
    # Past the grace, nothing was done: recorded so that it is never looked for again.
    record = {**error, "outcome": kind.nothing_done, "checked_at": now.isoformat()}
    if not update_request(request, (State.ABANDONED,), error=record):
        return check(kind, request)  # found meanwhile by another process
    return "nothing_done", None


def look_for(kind: RequestKind[Row, Result], request: Row) -> Result | None:
    """The request's result if reads find it now; None if not found or not readable."""
    try:
        return kind.find(request)
    except PayChargeError as exc:
        logger.info("%s request %s not looked for: %s", kind.name, request_name(request), exc)
        return None


def abandon(
    kind: RequestKind[Row, Result], request: Row, exc: PayChargeError | None, *, reason: str
) -> bool:
    """Move an open request to ``abandoned`` (never sent again); False if it had left them."""
    record = error_record(exc, UNKNOWN) if exc is not None else {"outcome": UNKNOWN}
    record["abandoned"] = reason
    if request.sent_at is None and request.attempts == 0:
        record["outcome"] = kind.nothing_done  # never sent: nothing can come of it
    moved = update_request(request, OPEN_REQUEST_STATES, state=State.ABANDONED, error=record)
    if moved:
        logger.warning(
            "%s request %s abandoned (%s): it will never be sent again",
            kind.name.capitalize(),
            request_name(request),
            reason,
        )
    return moved


def _mark_sent(request: Row) -> bool:
    """Record a send, only while the request is open: the gate that abandonment closes."""
    now = timezone.now()
    moved = update_request(
        request, OPEN_REQUEST_STATES, state=State.UNKNOWN, attempts=F("attempts") + 1, sent_at=now
    )
    if moved:
        request.sent_at = now
        request.attempts += 1
    return moved
