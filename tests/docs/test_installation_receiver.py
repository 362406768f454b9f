"""docs/installation.md's signal receiver and hooks, as pasted, heard for charges its checkout
did not make, and heard out of order (issue 43).

A sync brings every charge of the store: ones made in the gateway's console, by staff or by an
older integration, with no order of this shop in their metadata (or another shop's order
number). The guide's receiver raised ``KeyError: 'order'`` for each, re-run up to 8 times.
Its announcements may also arrive out of order: a late "failed" or "pending" must never move a
paid order back.

The guide's ``shop/payments.py`` block is run here as it is written, beside a stand-in for its
``shop/models.py``: an ``Order`` whose ``objects.filter(pk=...)`` converts the key as Django's
``IntegerField`` does (``int()``, a ``ValueError`` for "A-1001") and records what is updated.
tests/docs/test_installation.py runs the same code against a real database, more slowly.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from django_paycharge.models import Charge
from django_paycharge.signals import charge_status_changed

from .project import REPO
from .snippets import snippets


class _Orders:
    """``Order.objects``: ``filter(pk=...).update(**fields)``, recorded by key."""

    def __init__(self) -> None:
        self.updates: list[tuple[int | None, dict[str, Any]]] = []

    def filter(self, *, pk: Any) -> Any:
        key = None if pk is None else int(pk)  # what Django's IntegerField does with a key
        orders = self

        class _Matched:
            def update(self, **fields: Any) -> int:
                orders.updates.append((key, fields))
                return 1

            def first(self) -> None:
                return None

            def exists(self) -> bool:
                return False

        return _Matched()


@pytest.fixture
def guide() -> Iterator[tuple[types.ModuleType, _Orders]]:
    """The guide's ``shop/payments.py``, run as pasted (its receiver connected meanwhile)."""
    [body] = [
        s.body
        for s in snippets(REPO / "docs" / "installation.md", REPO)
        if s.action == "file" and s.target == "shop/payments.py"
    ]
    orders = _Orders()
    package = types.ModuleType("guide_shop")
    package.__path__ = []
    models = types.ModuleType("guide_shop.models")
    models.Order = type("Order", (), {"objects": orders})  # type: ignore[attr-defined]
    payments = types.ModuleType("guide_shop.payments")
    payments.__package__ = "guide_shop"
    saved = {name: sys.modules.get(name) for name in ("guide_shop", "guide_shop.models")}
    sys.modules.update({"guide_shop": package, "guide_shop.models": models})
    try:
        exec(compile(body, "docs/installation.md (shop/payments.py)", "exec"), payments.__dict__)
        yield payments, orders
    finally:
        charge_status_changed.disconnect(payments.__dict__.get("mark_order"))
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@pytest.mark.parametrize(
    "metadata",
    [{}, None, {"order": None}, {"order": "A-1001"}, {"customer": "c-9"}],
    ids=["empty", "null", "order-null", "another-integration", "other-keys"],
)
def test_a_charge_without_an_order_is_ignored_quietly(guide: Any, metadata: Any) -> None:
    payments, orders = guide
    charge = Charge(metadata=metadata)
    for previous, status in (("pending", "successful"), ("successful", "failed")):
        payments.mark_order(sender=Charge, charge=charge, previous_status=previous, status=status)
    assert orders.updates == []
    assert payments.return_url(None, charge) is None  # RETURN_URL then, as for any charge
    assert payments.order_admin_url(charge) is None  # no "Open the order" link


def test_an_order_is_marked_paid_and_stays_paid_whatever_comes_after(guide: Any) -> None:
    payments, orders = guide
    charge = Charge(metadata={"order": 7})
    heard = [("pending", "successful"), ("pending", "failed"), ("awaiting", "pending")]
    for previous, status in heard:  # "successful", then older news arriving late
        payments.mark_order(sender=Charge, charge=charge, previous_status=previous, status=status)
    assert orders.updates == [(7, {"paid": True})]
