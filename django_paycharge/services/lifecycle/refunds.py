"""Refund a charge, in full or in part, exactly once: the refund kind of the machine.

What is left to refund (:func:`refundable_amount`) counts every refund request
not known to have failed: one still being sent, one whose answer never came
(abandoned, being looked for) as much as a refund the gateway confirmed. It is
computed under the charge row's lock when a request is committed, so no sum of
refunds, from threads or processes, can exceed the charge.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from django.db import router
from django.db.models import (
    BigIntegerField,
    Case,
    Exists,
    OuterRef,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils.translation import gettext

from ...client.lifecycle_params import check_fields, refund_body
from ...client.vocabulary import (
    CANNOT_REFUND_UNSUCCESSFUL_CHARGE,
    NON_REFUNDABLE_PAYMENT_TYPES,
    REFUND_EXCEEDS_CHARGE_AMOUNT,
    REFUND_NOT_ALLOWED,
    REFUND_NOT_WITHIN_BOUNDS,
)
from ...exceptions import (
    APIError,
    ChargeStateError,
    FieldError,
    InvalidParametersError,
    PayChargeError,
    UnsupportedPaymentTypeError,
)
from ...models import COUNTED_REFUND_STATUSES, Charge, ChargeActionRequest, Refund
from ...models.compiled import Compiled
from ..clients import get_client
from ..mirror import store_of, store_refund
from .request_rows import outcome_unknown
from .requests import LifecycleKind, act, find_made, send_child


class RefundKind(LifecycleKind):
    """``POST .../refunds`` with the request's key; the result is the stored :class:`Refund`."""

    name = "refund"
    link = "refund"
    # Some payment types cannot be refunded: a charge the mirror refuses is read with its
    # token's payment type; one it does not refuse is sent, and the gateway refuses those.
    needs_payment_type = True
    blocked_by = frozenset({"capture", "cancel", "refund"})
    # Sent again after a lost answer, a refund that went through leaves too little.
    done_before_codes = frozenset({REFUND_EXCEEDS_CHARGE_AMOUNT, REFUND_NOT_WITHIN_BOUNDS})
    status_codes = frozenset({CANNOT_REFUND_UNSUCCESSFUL_CHARGE})

    def prepare(self, charge: Charge, given: dict[str, Any]) -> dict[str, Any]:
        if charge.payment_type in NON_REFUNDABLE_PAYMENT_TYPES:
            raise _not_refundable()
        if charge.status != "successful":
            raise self.state_error(charge.status)
        charged_currency = (charge.charged_currency or charge.requested_currency or "").upper()
        if given.setdefault("currency", charged_currency) != charged_currency:
            raise InvalidParametersError(
                errors=[FieldError("currency", gettext("must be the charge's currency"))]
            )
        left = refundable_amount(charge)
        if "amount" not in given and left == 0:
            raise ChargeStateError(
                gettext("Nothing is left to refund on this charge."), status=charge.status
            )
        params = refund_body(**{"amount": left, **given})
        if params["amount"] > left:
            reason = gettext("must be at most %(left)d, what is left to refund") % {"left": left}
            raise InvalidParametersError(errors=[FieldError("amount", reason)])
        return params

    def state_error(self, status: str | None) -> ChargeStateError:
        message = gettext("Only a successful charge can be refunded; its status is %(s)s.")
        return ChargeStateError(message % {"s": status or gettext("unknown")}, status=status)

    def refusal(self, request: ChargeActionRequest, exc: PayChargeError) -> PayChargeError:
        if isinstance(exc, APIError) and exc.code == REFUND_NOT_ALLOWED:
            # A payment type the mirror did not know yet: told as the local check tells it.
            error = _not_refundable()
            error.__cause__ = exc
            return error
        return super().refusal(request, exc)

    def send(self, request: ChargeActionRequest) -> Refund:
        refund: Refund = send_child(
            self, request, lambda client: client.refunds, store_refund, linked=True
        )
        return refund

    def find(self, request: ChargeActionRequest) -> Refund | None:
        charge = request.charge
        refunds = get_client(request.account).refunds.list(store_of(charge), charge.gateway_id)
        amount, currency = request.params.get("amount"), request.params.get("currency")

        def same(remote: Any) -> bool:
            return bool(remote.amount == amount and (remote.currency or "").upper() == currency)

        found: Refund | None = find_made(self, request, refunds, same, store_refund)
        return found


REFUND = RefundKind()


def _not_refundable() -> UnsupportedPaymentTypeError:
    return UnsupportedPaymentTypeError(
        gettext("Convenience store and bank transfer payments cannot be refunded.")
    )


def refundable_amount(charge: Charge) -> int:
    """What is left to refund, in minor units: the charged amount less refunds pending or
    successful, and less the amounts of refund requests not yet settled (being sent, or
    abandoned and looked for): those stay reserved until the gateway's outcome is known.

    Read where ``charge`` was read from (under its lock, when a request is committed)."""
    left = refundable_amounts({charge.pk: charge.charged_amount}, using=charge._state.db)
    return left[charge.pk]


def refundable_amounts(
    charged: Mapping[int, int | None], *, using: str | None = None
) -> dict[int, int]:
    """:func:`refundable_amount` of many charges, by pk (``charged``: each one's charged
    amount), in one grouped query a slice of :data:`AT_ONCE` charges, whatever
    their refunds: for a list or an export."""
    alias = using or router.db_for_read(Refund)
    pks = list(charged)
    taken: dict[int, int] = dict.fromkeys(pks, 0)
    for at in range(0, len(pks), AT_ONCE):
        for pk, total in _TAKEN.rows(alias, _padded(pks[at : at + AT_ONCE])):
            taken[pk] += int(total or 0)
    return {pk: left_to_refund(charged[pk], taken[pk]) for pk in pks}


def left_to_refund(charged: int | None, counted: int | None, reserved: int = 0) -> int:
    """What is left to refund of a charge of ``charged`` (minor units), whose refunds that
    count (:func:`counted_refunds`) sum to ``counted`` and whose refund requests of unknown
    outcome reserve ``reserved`` (:func:`reserved_amounts`)."""
    return max(0, (charged or 0) - int(counted or 0) - reserved)


def reserved_amounts(pks: Collection[int], *, using: str | None = None) -> dict[int, int]:
    """What refund requests whose outcome is not known yet reserve of the charges ``pks``,
    by pk: their amounts stay reserved until the gateway says."""
    keys, reserved = list(pks), dict[int, int]()
    for at in range(0, len(keys), AT_ONCE):
        requests = (
            unsettled_refund_requests().using(using).filter(charge__in=keys[at : at + AT_ONCE])
        )
        reserved.update(
            (pk, int(total or 0))
            for pk, total in requests.values_list("charge").annotate(total=_asked()).order_by()
        )
    return reserved


def counted_refunds() -> QuerySet[Refund]:
    """The refunds that take from what is left to refund: pending or successful."""
    return Refund.objects.filter(status__in=COUNTED_REFUND_STATUSES)


def unsettled_refund_requests() -> QuerySet[ChargeActionRequest]:
    """Refund requests whose outcome is not known yet (no refund stored for them): their
    amounts stay reserved."""
    return ChargeActionRequest.objects.filter(
        outcome_unknown(REFUND.nothing_done), kind=REFUND.name, refund__isnull=True
    )


def _asked() -> Sum:
    """The sum of refund requests' amounts: a whole number each (``refund_body``), summed
    by the database."""
    return Sum(Cast(KT("params__amount"), BigIntegerField()))


def refund_annotations() -> tuple[Case, Exists]:
    """What :func:`refundable_amounts` asks of each charge, as two annotations of a query of
    charges (read with its rows, not asked a list of charges at a time): the sum of its
    refunds that count (None: none), and whether a refund request of unknown outcome
    reserves some of it (then :func:`reserved_amounts` says how much). With those,
    :func:`left_to_refund` is what is left."""
    refunds = counted_refunds().filter(charge=OuterRef("pk"))
    total = refunds.order_by().values("charge").annotate(total=Sum("amount")).values("total")
    # Summed only where one exists: PostgreSQL asks that of a hashed list of the charges with
    # one, and sums for those only, not with an index scan for every charge.
    counted = Case(When(Exists(refunds), then=Subquery(total)))
    return counted, Exists(unsettled_refund_requests().filter(charge=OuterRef("pk")))


def _padded(pks: list[int]) -> list[int]:
    """``pks``, its last repeated up to a power of two (or :data:`AT_ONCE`): the query is
    compiled once a length (:class:`Compiled`), and an id twice in an ``IN`` is once."""
    size = min(AT_ONCE, 1 << (len(pks) - 1).bit_length())
    return pks + pks[-1:] * (size - len(pks))


def _taken(pks: list[int]) -> Any:
    """What uses up each of ``pks``: the sum of its refunds that count
    (:func:`counted_refunds`), and the sum of what its refund requests of unknown outcome
    reserve (:func:`unsettled_refund_requests`). Two rows a charge at most, in one
    statement."""
    refunds = counted_refunds().filter(charge__in=pks)
    refunded = refunds.values_list("charge").annotate(total=Sum("amount")).order_by()
    unsettled = unsettled_refund_requests().filter(charge__in=pks)
    reserved = unsettled.values_list("charge").annotate(total=_asked()).order_by()
    # Unordered: Django 6 gives a union its first model's default ordering (a refund's
    # date), which no column of the union's select can order by.
    return refunded.union(reserved, all=True).order_by()


#: Read with every refund, under the charge's lock: compiled once.
_TAKEN = Compiled(_taken)


#: Charges asked about in one query (each twice: below SQLite's old limit of 999 parameters).
AT_ONCE = 450


def refund_charge(
    charge: Charge,
    *,
    amount: int | None = None,
    currency: str | None = None,
    reason: str | None = None,
    message: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Refund:
    """Refund ``amount`` of a ``successful`` charge (what is left to refund when None).

    One gateway call when nothing goes wrong: the charge is checked as the
    mirror holds it (read from the gateway only before a refusal, the mirror
    may be behind); its status and payment type must allow a refund
    (:class:`ChargeStateError`, :class:`UnsupportedPaymentTypeError`
    otherwise), ``currency`` defaults to
    the charged one, and ``amount`` may not exceed what is left
    (:func:`refundable_amount`, checked under a lock on the charge so two
    clicks cannot both pass). The refund is returned as the gateway answered it,
    usually ``pending``; ``refund_status_changed`` tells when it ends (a
    ``refund_finished`` webhook, or a sync). Calling again with
    the same ``idempotency_key`` returns the same refund. While another
    capture, cancel or refund of the charge is being sent,
    :class:`ChargeBusyError` (nothing sent). If the gateway never answers for
    sure: :class:`ActionOutcomeUnknownError` (``outcome == "unknown"``): do
    not refund again; the refund is looked for and its amount stays reserved.
    Must not run inside a transaction of the caller's.
    """
    args: dict[str, Any] = {
        "amount": amount,
        "currency": currency,
        "reason": reason,
        "message": message,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    # Bad input is refused before anything is read or sent; kept in the form it is sent.
    given = check_fields({k: v for k, v in args.items() if v is not None})
    refund: Refund = act(
        REFUND, charge, given=given, idempotency_key=idempotency_key, requested_by=requested_by
    )
    return refund
