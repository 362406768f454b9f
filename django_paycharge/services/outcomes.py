"""What a caller learns about a charge request: a charge, a refusal, or "unknown: check again"."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from .. import conf
from ..client.vocabulary import UNPAID_FINAL_STATUSES
from ..exceptions import ChargeOutcomeUnknownError, ChargeRequestAbandonedError
from ..models import Charge, ChargeRequest
from .charge_requests import (
    abandon,
    ask_gateway,
    find_remote_charge,
    refusal_from_record,
    reload,
    request_name,
)
from .charges import refresh_charge

State = ChargeRequest.State


def send_charge_request(request: ChargeRequest) -> Charge:
    """Send a committed request (asking again while unknown); abandon it if it stays unknown.

    Returns the charge, or raises: the gateway's refusal (``outcome == "refused"``,
    the request is ``failed``) or :class:`ChargeOutcomeUnknownError` (the request
    is ``abandoned``, in the same statement that records why: never sent again).
    """
    asked = ask_gateway(request, budget=conf.get_seconds("CREATE_SETTLE_SECONDS"))
    if asked.charge is not None:
        return asked.charge
    if asked.refused is not None:
        raise asked.refused
    if asked.settled is not None:
        return answer_settled_request(asked.settled)
    found = find_remote_charge(request)  # a read: the answer may have been lost, not the charge
    if found is not None:
        return found
    if not abandon(request, asked.unknown, reason="create"):
        return answer_settled_request(reload(request))  # settled meanwhile by another process
    raise ChargeOutcomeUnknownError(
        idempotency_key=request_name(request),
        request_id=asked.unknown.request_id if asked.unknown else None,
    ) from asked.unknown


def answer_settled_request(request: ChargeRequest) -> Charge:
    """The answer for a request asked for again: its charge, or the error it ended with.

    An abandoned request is never sent: it is checked (reads only) instead.
    """
    if request.state in ChargeRequest.OPEN_STATES:
        return send_charge_request(request)
    if request.state == State.SUCCEEDED:
        if request.charge is not None:
            return request.charge
        if request.charge_gateway_id is not None:
            return refresh_charge(request.charge_gateway_id, account=request.account)
    if request.state == State.FAILED:
        raise refusal_from_record(request.error)
    check = check_charge_request(request)
    assert check is not None
    if check.charge is not None:
        return check.charge
    if check.outcome == "not_charged":
        raise ChargeRequestAbandonedError()
    raise ChargeOutcomeUnknownError(idempotency_key=request_name(request))


@dataclass(frozen=True)
class ChargeCheck:
    """What is known of a charge request now. ``may_pay_again``: a new attempt is safe.

    ``outcome``: ``charged`` (``charge`` is its charge, whatever its status),
    ``refused``, ``not_charged`` (abandoned, and nothing came of it), ``pending``
    (being sent, or recovery will send it) or ``unknown`` (abandoned recently:
    the gateway may still finish it; check again later).
    """

    outcome: str
    request: ChargeRequest
    charge: Charge | None = None

    @property
    def may_pay_again(self) -> bool:
        """Nothing was taken and nothing will be: refused, not charged, or its charge failed."""
        if self.outcome == "charged":
            return self.charge is not None and self.charge.status in UNPAID_FINAL_STATUSES
        return self.outcome in ("refused", "not_charged")


def check_charge_request(request: ChargeRequest | str) -> ChargeCheck | None:
    """Check again: a request's outcome as far as it can be known now (reads only).

    ``request``: the request, or the caller's key it was made with (None when no
    request has that key). An abandoned request is looked for at the gateway;
    once ``CHARGE_REQUEST_GRACE`` has passed since it was last sent and nothing
    was found, it is recorded as ``not_charged`` for good.
    """
    if isinstance(request, str):
        found_request = ChargeRequest.objects.filter(caller_key=request).first()
        if found_request is None:
            return None
        request = found_request
    request = reload(request)
    if request.state == State.SUCCEEDED:
        return ChargeCheck("charged", request, request.charge)
    if request.state == State.FAILED:
        return ChargeCheck("refused", request)
    if request.state in ChargeRequest.OPEN_STATES:
        return ChargeCheck("pending", request)
    error = request.error if isinstance(request.error, dict) else {}
    if error.get("outcome") == "not_charged":
        return ChargeCheck("not_charged", request)
    found = find_remote_charge(request)
    if found is not None:
        return ChargeCheck("charged", reload(request), found)
    grace = timedelta(seconds=conf.get_seconds("CHARGE_REQUEST_GRACE"))
    now = timezone.now()
    if request.sent_at is not None and now < request.sent_at + grace:
        return ChargeCheck("unknown", request)
    # Past the grace, nothing was made: recorded so that it is never looked for again.
    ChargeRequest.objects.filter(pk=request.pk, state=State.ABANDONED).update(
        error={**error, "outcome": "not_charged", "checked_at": now.isoformat()}, updated_at=now
    )
    return ChargeCheck("not_charged", reload(request))
