"""What the mirror says when it stores a charge: the one function every charge writer calls.

A charge the mirror wrote (inserted by a page of the sync, a read, a webhook or
a checkout; rewritten because the gateway said something new) is announced
here and nowhere else: ``charge_updated``, then ``charge_status_changed`` when
its status moved (a new charge's previous status is None). Called inside the
write's transaction: recorded with the change, heard after it commits
(:func:`django_paycharge.outbox.send`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.dispatch import Signal

from ... import outbox, signals
from ...models import Charge

#: What :func:`announce_charges` sends.
CHARGE_SIGNALS = (signals.charge_updated, signals.charge_status_changed)


def charges_heard() -> bool:
    """Whether a receiver listens to what :func:`announce_charges` sends (if not, a writer
    may skip loading the rows it would announce)."""
    return any(signal.has_listeners(Charge) for signal in CHARGE_SIGNALS)


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
    said: list[tuple[Signal, Any, dict[str, Any]]] = []
    for charge, previous in changes:
        said.append(
            (signals.charge_updated, Charge, {"charge": charge, "previous_status": previous})
        )
        if previous != charge.status:
            moved = {"charge": charge, "previous_status": previous, "status": charge.status}
            said.append((signals.charge_status_changed, Charge, moved))
    outbox.send_all(said, using=alias, background=background)
