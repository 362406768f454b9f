"""What the mirror says when it stores a charge: the one function every charge writer calls.

A charge the mirror wrote (inserted by a page of the sync, a read, a webhook or
a checkout; rewritten because the gateway said something new) is announced
here and nowhere else: ``charge_updated``, then ``charge_status_changed`` when
its status moved (a new charge's previous status is None); for a charge of a
subscription that became paid or failed, ``subscription_renewal_paid`` or
``subscription_renewal_failed`` too. A subscription the mirror wrote is announced
by :func:`announce_subscription`, called by its one writer; a saved card by
:func:`announce_saved_card`. Called inside the
write's transaction: recorded with the change, heard after it commits
(:func:`django_paycharge.outbox.send`); a stale or repeated read changes nothing,
so it announces nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.dispatch import Signal

from ... import outbox, signals
from ...client.token_vocabulary import RECURRING_TOKEN_TYPE
from ...models import Charge, Subscription, TransactionTokenInfo

#: What :func:`announce_charges` sends.
CHARGE_SIGNALS = (signals.charge_updated, signals.charge_status_changed)
#: What it sends for a subscription's charge (sender: :class:`Subscription`).
RENEWAL_SIGNALS = (signals.subscription_renewal_paid, signals.subscription_renewal_failed)
#: A charge's statuses that are a failed payment.
_FAILED = frozenset({"failed", "error"})
#: What :func:`announce_subscription` sends besides ``subscription_status_changed``.
_REACHED = {
    "suspended": signals.subscription_suspended,
    "canceled": signals.subscription_canceled,
    "completed": signals.subscription_completed,
}

Said = list[tuple[Signal, Any, dict[str, Any]]]


def charges_heard() -> bool:
    """Whether a receiver listens to what :func:`announce_charges` sends (if not, a writer
    may skip loading the rows it would announce)."""
    return any(signal.has_listeners(Charge) for signal in CHARGE_SIGNALS) or any(
        signal.has_listeners(Subscription) for signal in RENEWAL_SIGNALS
    )


def announce_charges(
    changes: Iterable[tuple[Charge, str | None]], alias: str, *, background: bool = False
) -> None:
    """Announce each ``(charge, its status before the write or None when new)``.

    All in one statement (a page of a sync: one write, not one a charge); heard
    after the commit, in this order (``background``: by a task of the task
    backend when work goes there, see :func:`django_paycharge.outbox.send_all`).
    Recorded per receiver: one failing receiver stops neither the others nor the
    announcements of the other charges, and is run again until it returns.
    """
    said: Said = []
    renewals: list[tuple[Signal, Charge]] = []
    for charge, previous in changes:
        said.append(
            (signals.charge_updated, Charge, {"charge": charge, "previous_status": previous})
        )
        if previous != charge.status:
            moved = {"charge": charge, "previous_status": previous, "status": charge.status}
            said.append((signals.charge_status_changed, Charge, moved))
            renewal = _renewal(charge, previous)
            if renewal is not None:
                renewals.append((renewal, charge))
    said += _renewals_said(renewals, alias)
    outbox.send_all(said, using=alias, background=background)


def _renewal(charge: Charge, previous: str | None) -> Signal | None:
    """The renewal signal a subscription's charge whose status moved says, if any."""
    if charge.subscription_id is None:
        return None
    if charge.status == "successful":
        return signals.subscription_renewal_paid
    if charge.status in _FAILED and previous not in _FAILED:
        return signals.subscription_renewal_failed
    return None


def _renewals_said(renewals: list[tuple[Signal, Charge]], alias: str) -> Said:
    """Each renewal with its subscription's row (one query; None when not mirrored yet)."""
    heard = [(signal, charge) for signal, charge in renewals if signal.has_listeners(Subscription)]
    if not heard:
        return []
    ids = {charge.subscription_id for _, charge in heard}
    rows = Subscription.objects.using(alias).in_bulk(list(ids), field_name="gateway_id")
    return [
        (signal, Subscription, {"subscription": rows.get(charge.subscription_id), "charge": charge})
        for signal, charge in heard
    ]


def announce_subscription(row: Subscription, previous: str | None, alias: str) -> None:
    """Announce a subscription the mirror wrote whose status moved (``previous``: its
    status before, None when new): ``subscription_status_changed``, then the signal of
    the status reached when it is suspended, canceled or completed."""
    if previous == row.status:
        return
    moved = {"subscription": row, "previous_status": previous, "status": row.status}
    said: Said = [(signals.subscription_status_changed, Subscription, moved)]
    reached = _REACHED.get(row.status or "")
    if reached is not None:
        said.append((reached, Subscription, {"subscription": row, "previous_status": previous}))
    outbox.send_all(said, using=alias)


def announce_saved_card(
    row: TransactionTokenInfo,
    before: TransactionTokenInfo | None,
    alias: str,
    *,
    replaced: bool = False,
) -> None:
    """Announce a saved card (a recurring token) the mirror wrote (``before``: the row before,
    None when new): ``saved_card_replaced`` once the row first names the token it replaces,
    ``saved_card_deleted`` once it is no longer active, unless a renewal ``replaced`` it."""
    if row.type != RECURRING_TOKEN_TYPE:
        return
    said: Said = []
    if row.previous_id is not None and (before is None or before.previous_id != row.previous_id):
        renewed = {"saved_card": row, "previous_token_id": str(row.previous_id)}
        said.append((signals.saved_card_replaced, TransactionTokenInfo, renewed))
    if row.active is False and not replaced and (before is None or before.active is not False):
        said.append((signals.saved_card_deleted, TransactionTokenInfo, {"saved_card": row}))
    outbox.send_all(said, using=alias)
