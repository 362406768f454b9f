"""What the mirror announces when it stores a charge: one function, whichever writer stored it."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from django_paycharge import services, signals
from django_paycharge.client import parse_charge
from django_paycharge.models import Charge

from ..docs.project import REPO

pytestmark = pytest.mark.django_db

PACKAGE = REPO / "django_paycharge"
#: Where the charge signals are defined, and the one module that sends them.
ALLOWED = {PACKAGE / "signals.py", PACKAGE / "services" / "mirror" / "announced.py"}
CHARGE_SIGNALS = {"charge_updated", "charge_status_changed"}


def test_only_the_mirrors_announcing_function_names_the_charge_signals():
    """A second charge writer (the checkout's insert had its own) would say them itself."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = getattr(node, "attr", None) or getattr(node, "id", None)
            if named in CHARGE_SIGNALS:
                found.append(f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}")
    assert found == []


@pytest.fixture
def heard():
    """What the charge signals carried, in order: (signal name, its arguments)."""
    said: list[tuple[str, dict[str, Any]]] = []
    receivers = {}
    for name in sorted(CHARGE_SIGNALS):

        def receiver(name: str = name, **kwargs: Any) -> None:
            kwargs.pop("signal")
            kwargs.pop("event_id")
            said.append((name, kwargs))

        receivers[name] = receiver
        getattr(signals, name).connect(receiver, sender=Charge, weak=False)
    yield said
    for name, receiver in receivers.items():
        getattr(signals, name).disconnect(receiver, sender=Charge)


def _said(heard: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any, dict[str, Any]]]:
    """What was said, with each charge's gateway id and status instead of the instance."""
    return [
        (name, (kw["charge"].gateway_id, kw["charge"].status), {**kw, "charge": None})
        for name, kw in heard
    ]


def test_a_checkouts_new_charge_is_announced_as_a_sync_announces_the_same_charge(
    fake_gateway, heard, django_capture_on_commit_callbacks
):
    token = fake_gateway.create_transaction_token("card")["id"]
    with django_capture_on_commit_callbacks(execute=True):
        charge = services.create_charge(transaction_token_id=token, amount=1500, currency="JPY")
    by_checkout = _said(heard)
    assert [name for name, _charge, _kw in by_checkout] == [
        "charge_updated",
        "charge_status_changed",
    ]
    remote = parse_charge(Charge.objects.get(pk=charge.pk).raw)  # the create's answer
    Charge.objects.all().delete()
    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.upsert_charges([remote], account="default")
    assert _said(heard) == by_checkout
