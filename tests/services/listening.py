"""What signals said during a test, in order: one recorder for the service tests."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django_paycharge import signals


@contextmanager
def listening(names: Iterable[str], sender: Any) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """``(name, arguments but the signal)`` of each of ``names`` sent by ``sender``, in order."""
    said: list[tuple[str, dict[str, Any]]] = []
    receivers = {}
    for name in names:

        def receiver(name: str = name, **kwargs: Any) -> None:
            kwargs.pop("signal")
            said.append((name, kwargs))

        receivers[name] = receiver
        signals.SIGNALS[name].connect(receiver, sender=sender, weak=False)
    try:
        yield said
    finally:
        for name, receiver in receivers.items():
            signals.SIGNALS[name].disconnect(receiver, sender=sender)
