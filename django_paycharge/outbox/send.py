"""``send``: the one way the services announce a change to the shop's receivers.

Each change is recorded with the change and heard after the commit, each
receiver run until it returns (:mod:`.announcements`). ``charge_returned``
alone is not recorded: it hands receivers the customer's live request, which no
later run could have. See docs/signals.md.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.dispatch import Signal

from .. import signals
from .announcements import announce, announce_all
from .receivers import dotted_name

logger = logging.getLogger("django_paycharge.signals")

_SIGNAL_NAMES = {id(signal): name for name, signal in signals.SIGNALS.items()}


def send(signal: Signal, *, sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """Announce a change: recorded now on ``using``, heard by each receiver after the commit.

    Call it inside the transaction that makes the change, on the alias it
    writes to (outside one, the record commits on its own). Receivers run when
    the outermost transaction on ``using`` commits, never for a change that was
    rolled back. A receiver that raises is logged and run again later, alone
    (the others are not run twice); it changes nothing else: the caller gets
    its answer, the stored data stays. Each receiver gets ``event_id``.
    """
    if not signal.has_listeners(sender):
        return
    if signal is signals.charge_returned:
        _send_live(signal, sender=sender, using=using, **kwargs)
        return
    announce(_SIGNAL_NAMES[id(signal)], signal, sender=sender, using=using, kwargs=kwargs)


def send_all(
    changes: Iterable[tuple[Signal, Any, Mapping[str, Any]]],
    *,
    using: str = DEFAULT_DB_ALIAS,
    background: bool = False,
) -> None:
    """Announce many changes of one transaction, each ``(signal, sender, kwargs)``, as
    :func:`send` does each: recorded together in one statement, heard after the commit in
    their order, by this process or, with ``background``, by a task of the task backend
    when work goes there (a page of a sync: the sync goes on meanwhile).

    ``charge_returned``, heard live, is not announced this way.
    """
    recorded = []
    heard: dict[tuple[int, int], bool] = {}  # a page's changes share a few (signal, sender)
    for signal, sender, kwargs in changes:
        if signal is signals.charge_returned:
            raise ValueError("charge_returned is heard live: send it with send()")
        listened = heard.get((id(signal), id(sender)))
        if listened is None:
            listened = heard[id(signal), id(sender)] = signal.has_listeners(sender)
        if listened:
            recorded.append((_SIGNAL_NAMES[id(signal)], signal, sender, kwargs))
    if recorded:
        announce_all(recorded, using=using, background=background)


def _send_live(signal: Signal, *, sender: Any, using: str, **kwargs: Any) -> None:
    """Run the receivers once after the commit, robustly; nothing is recorded."""

    def deliver() -> None:
        responses = signal.send_robust(sender=sender, event_id=uuid.uuid4(), **kwargs)
        for receiver, result in responses:
            if isinstance(result, Exception):
                # Django's own log line (django.dispatch) carries the traceback.
                logger.error(
                    "Receiver %s of %s failed (%s); nothing else was affected",
                    dotted_name(receiver),
                    _SIGNAL_NAMES.get(id(signal), "a signal"),
                    type(result).__name__,
                )

    transaction.on_commit(deliver, using=using)
