"""Fixtures of the service tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_paycharge import signals


@pytest.fixture
def caught() -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Every lifecycle signal sent during the test, by name."""
    names = ("refund_created", "refund_status_changed", "charge_captured", "charge_canceled")
    seen: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    handlers = {}
    for name in names:

        def handler(sender: Any, _name: str = name, **kwargs: Any) -> None:
            seen[_name].append(kwargs)

        handlers[name] = handler
        getattr(signals, name).connect(handler, weak=False)
    yield seen
    for name, handler in handlers.items():
        getattr(signals, name).disconnect(handler)
