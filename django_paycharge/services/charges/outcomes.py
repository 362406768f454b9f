"""What a caller learns about a charge request: a charge, a refusal, or "unknown: check again".

The machine is :mod:`..lifecycle.exactly_once`; these are its answers in the words of a
payment: ``charged``, ``refused``, ``not_charged``, ``pending``, ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...client.vocabulary import UNPAID_FINAL_STATUSES
from ...models import Charge, ChargeRequest
from ..lifecycle import answer, check, send
from .charge_requests import CREATE

#: The machine's outcomes as a charge request's.
_WORDS = {"done": "charged", "nothing_done": "not_charged"}


def send_charge_request(request: ChargeRequest, *, recorded: bool = False) -> Charge:
    """Send a committed request (asking again while unknown); abandon it if it stays unknown.

    Returns the charge, or raises: the gateway's refusal (``outcome == "refused"``,
    the request is ``failed``) or :class:`ChargeOutcomeUnknownError` (the request
    is ``abandoned``, in the same statement that records why: never sent again).
    ``recorded``: the request was committed with its first send counted
    (see :func:`..lifecycle.ask`).
    """
    return send(CREATE, request, recorded=recorded)


def answer_settled_request(request: ChargeRequest) -> Charge:
    """The answer for a request asked for again: its charge, or the error it ended with.

    An abandoned request is never sent: it is checked (reads only) instead.
    """
    return answer(CREATE, request)


@dataclass(frozen=True)
class ChargeCheck:
    """What is known of a charge request now. ``may_pay_again``: a new attempt is safe.

    ``outcome``: ``charged`` (``charge`` is its charge, whatever its status),
    ``refused``, ``not_sent`` (nothing was processed: payments were unavailable),
    ``not_charged`` (abandoned, and nothing came of it), ``pending``
    (being sent, or recovery will send it) or ``unknown`` (abandoned recently:
    the gateway may still finish it; check again later).
    """

    outcome: str
    request: ChargeRequest
    charge: Charge | None = None

    @property
    def may_pay_again(self) -> bool:
        """Nothing was taken and nothing will be: refused, not sent, not charged, or its charge
        failed."""
        if self.outcome == "charged":
            return self.charge is not None and self.charge.status in UNPAID_FINAL_STATUSES
        return self.outcome in ("refused", "not_sent", "not_charged")


def check_charge_request(request: ChargeRequest | str) -> ChargeCheck | None:
    """Check again: a request's outcome as far as it can be known now (reads only).

    ``request``: the request, or the caller's key it was made with (None when no
    request has that key). An abandoned request is looked for at the gateway;
    once ``CHARGE_REQUEST_GRACE`` has passed since it was last sent and nothing
    was found, it is recorded as ``not_charged`` for good.
    """
    if isinstance(request, str):
        found = ChargeRequest.objects.filter(caller_key=request).first()
        if found is None:
            return None
        request = found
    outcome, charge = check(CREATE, request)
    fresh = ChargeRequest.objects.select_related("charge").get(pk=request.pk)
    return ChargeCheck(_WORDS.get(outcome, outcome), fresh, charge)
