"""Refund many charges at once (an event canceled): each through ``refund_charge``, paced.

A batch has a name, and each charge's idempotency key is derived from it and the
charge (``refund-many:<batch>:<charge id>``). Running the same batch again, after a
crash, a Ctrl-C or a failure, therefore asks the one exactly-once machine about the
same request: a refund it made is answered from the mirror (nothing sent), one
whose answer was lost is asked again with its key (the gateway replays it), one
whose outcome is still being found out stays so. No charge is refunded twice. Only
a request that provably was not sent (``not_sent``: nothing was processed) is made
anew, under the next key (``...:2``), as the machine asks.

What can be refunded is the refund kind's own rule (``REFUND.prepare``: a successful
charge, not paid at a convenience store or by bank transfer, something left): a
charge it refuses is skipped, before anything is sent.

The pace: at most ``rate`` refunds a second, spaced evenly. A 429 is the client's
to handle: it waits for the gateway's ``Retry-After`` and pauses every request of
the account's client until then (``client.throttle``), so the batch slows down with it.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.translation import gettext

from ..client.lifecycle_params import check_fields
from ..client.vocabulary import FINAL_STATUSES
from ..exceptions import (
    ActionOutcomeUnknownError,
    AuthenticationError,
    ChargeStateError,
    ConfigurationError,
    FieldError,
    InvalidParametersError,
    PayChargeError,
    UnsupportedPaymentTypeError,
)
from ..models import Charge, ChargeActionRequest, RequestState
from .lifecycle import REFUND, refund_charge

#: Refunds a second unless told otherwise. The gateway publishes no rate limit
#: (spec: "not shown"); a refund costs one to three requests (the refund; a read of the
#: charge when the mirror's status is not final, of its token when the mirror lacks the
#: payment type), so 2 keeps the account well under 10 requests a second, the lowest
#: limit payment gateways commonly document (for test modes), and leaves room for the
#: shop's own checkouts.
DEFAULT_RATE = 2.0
KEY_PREFIX = "refund-many"
BATCH_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
METADATA_KEY = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")

#: What became of one charge.
REFUNDED = "refunded"  # refunded by this run
DONE_BEFORE = "done_before"  # by an earlier run of the batch (or being found out)
WOULD_REFUND = "would_refund"  # a dry run
SKIPPED = "skipped"  # cannot be refunded: its status, payment type, nothing left
FAILED = "failed"  # refused by the gateway, not sent, busy
UNKNOWN = "unknown"  # the gateway has not answered for sure: do not refund again


@dataclass(frozen=True)
class RefundStep:
    """One charge of the batch: what became of it, the money, and why (skipped, failed)."""

    charge: Charge
    outcome: str
    amount: int = 0
    currency: str = ""
    detail: str = ""


@dataclass
class RefundManyResult:
    """The batch so far: counts by outcome and money (minor units, by currency)."""

    total: int
    counts: Counter[str] = field(default_factory=Counter)
    amounts: Counter[str] = field(default_factory=Counter)

    def add(self, step: RefundStep) -> None:
        self.counts[step.outcome] += 1
        if step.amount:
            self.amounts[step.currency] += step.amount

    @property
    def left(self) -> int:
        return self.total - sum(self.counts.values())

    @property
    def ok(self) -> bool:
        """Nothing failed and nothing is unknown."""
        return not (self.counts[FAILED] or self.counts[UNKNOWN])


class Pacer:
    """At most ``rate`` starts a second, evenly spaced; ``clock`` and ``sleep`` injectable."""

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.interval = 1.0 / rate
        self._clock, self._sleep = clock, sleep
        self._next: float | None = None

    def wait(self) -> None:
        now = self._clock()
        if self._next is not None and now < self._next:
            self._sleep(self._next - now)
            now = self._next
        self._next = now + self.interval


def batch_charges(
    *,
    metadata: Mapping[str, str] | None = None,
    charge_ids: Iterable[object] | None = None,
    account: str | None = None,
) -> QuerySet[Charge]:
    """The charges whose metadata has every ``key: value`` given (the value as text, or as
    the number it spells) and, when ``charge_ids`` are given, among those: oldest first."""
    charges = Charge.objects.all()
    for key, value in (metadata or {}).items():
        if not METADATA_KEY.fullmatch(key):
            reason = gettext("must be letters, digits, - or single _")
            raise InvalidParametersError(errors=[FieldError("metadata", reason)])
        match = Q(**{f"metadata__{key}": value})
        if re.fullmatch(r"-?\d{1,18}", value):
            match |= Q(**{f"metadata__{key}": int(value)})
        charges = charges.filter(match)
    if charge_ids is not None:
        charges = charges.filter(gateway_id__in=list(charge_ids))
    if account is not None:
        charges = charges.filter(account=account)
    return charges.order_by("pk")


def refund_many(
    charges: Iterable[Charge],
    *,
    batch: str,
    reason: str | None = None,
    message: str | None = None,
    rate: float = DEFAULT_RATE,
    dry_run: bool = False,
    requested_by: str = "",
    progress: Callable[[RefundStep, RefundManyResult], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> RefundManyResult:
    """Refund what is left of each of ``charges``, one at a time through ``refund_charge``.

    ``batch`` names the run: the same name resumes it (see the module's docstring).
    ``progress`` is called after each charge with its :class:`RefundStep` and the totals.
    ``dry_run``: nothing is sent; each charge is told what would become of it.
    A charge that cannot be refunded is skipped, one the gateway refuses or that could
    not be sent fails, and the batch goes on; only credentials or settings the gateway
    or the app refuse stop it (every charge would fail the same way).
    """
    if not BATCH_NAME.fullmatch(batch):
        reason_text = gettext("must be 1 to 64 letters, digits, '.', '_' or '-'")
        raise InvalidParametersError(errors=[FieldError("batch", reason_text)])
    if not rate > 0:
        raise InvalidParametersError(errors=[FieldError("rate", gettext("must be above 0"))])
    given = check_fields({k: v for k, v in (("reason", reason), ("message", message)) if v})
    rows = list(charges)
    keys = _keys(batch, rows)
    pacer = Pacer(rate, clock, sleep)
    result = RefundManyResult(total=len(rows))
    for charge in rows:
        key, state = keys[charge.pk]
        if dry_run:
            step = _foreseen(charge, state)
        else:
            step = _refund(charge, key, state, given, pacer, requested_by)
        result.add(step)
        if progress is not None:
            progress(step, result)
    return result


def _keys(batch: str, rows: list[Charge]) -> dict[int, tuple[str, str | None]]:
    """Each charge's key in this batch and the state of its request under it (None: none).

    The last attempt's key, unless it was not sent: then the next one (nothing came of it).
    """
    prefix = f"{KEY_PREFIX}:{batch}:"
    made = ChargeActionRequest.objects.filter(
        kind=REFUND.name, idempotency_key__startswith=prefix
    ).order_by("pk")
    attempts: dict[int, list[str]] = {}
    for charge_pk, key, made_state in made.values_list("charge_id", "idempotency_key", "state"):
        if key.startswith(prefix):  # SQLite's LIKE ignores case: batch E42 is not e42
            attempts.setdefault(charge_pk, []).append(made_state)
    keys: dict[int, tuple[str, str | None]] = {}
    state: str | None
    for charge in rows:
        states = attempts.get(charge.pk, [])
        number, state = len(states), (states[-1] if states else None)
        if state == RequestState.NOT_SENT:
            number, state = number + 1, None
        suffix = f":{number}" if number > 1 else ""
        keys[charge.pk] = (f"{prefix}{charge.gateway_id}{suffix}", state)
    return keys


def _refusal(charge: Charge) -> tuple[int, str] | str | None:
    """What would be refunded as the mirror has it (amount, currency), or why it cannot be.

    None for a charge whose status in the mirror may still change (pending, awaiting,
    authorized): the machine reads it from the gateway before it decides.
    """
    if charge.status not in FINAL_STATUSES:
        return None
    try:
        params = REFUND.prepare(charge, {})
    except (ChargeStateError, UnsupportedPaymentTypeError, InvalidParametersError) as exc:
        return str(exc)
    return int(params["amount"]), str(params["currency"])


def _foreseen(charge: Charge, state: str | None) -> RefundStep:
    if state is not None:
        return RefundStep(charge, DONE_BEFORE, detail=state)
    local = _refusal(charge)
    if local is None:
        status = charge.status or gettext("unknown")
        why = gettext("its status in the mirror is %(s)s: read from the gateway when run")
        return RefundStep(charge, SKIPPED, detail=why % {"s": status})
    if isinstance(local, str):
        return RefundStep(charge, SKIPPED, detail=local)
    return RefundStep(charge, WOULD_REFUND, *local)


def _refund(
    charge: Charge,
    key: str,
    state: str | None,
    given: dict[str, Any],
    pacer: Pacer,
    requested_by: str,
) -> RefundStep:
    """Refund one charge under ``key``; ``state``: its request's, when the batch made one."""
    if state is None:
        local = _refusal(charge)
        if isinstance(local, str):
            return RefundStep(charge, SKIPPED, detail=local)
    if state not in (RequestState.SUCCEEDED, RequestState.FAILED):  # else: from the mirror
        pacer.wait()
    try:
        refund = refund_charge(
            charge,
            reason=given.get("reason"),
            message=given.get("message"),
            idempotency_key=key,
            requested_by=requested_by,
        )
    except (ChargeStateError, UnsupportedPaymentTypeError) as exc:
        return RefundStep(charge, SKIPPED, detail=str(exc))
    except ActionOutcomeUnknownError as exc:
        return RefundStep(charge, UNKNOWN, detail=str(exc))
    except (AuthenticationError, ConfigurationError):
        raise  # every other charge would fail the same way
    except PayChargeError as exc:
        return RefundStep(charge, FAILED, detail=str(exc))
    outcome = REFUNDED if state is None else DONE_BEFORE
    return RefundStep(charge, outcome, refund.amount or 0, (refund.currency or "").upper())
