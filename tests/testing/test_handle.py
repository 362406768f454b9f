"""The handle of docs/fake-gateway.md: every member it lists exists and reaches the state."""

from __future__ import annotations

import re
from pathlib import Path

from django_paycharge.testing import FakeGateway
from django_paycharge.testing.pytest_plugin import InProcessGateway
from django_paycharge.testing.server import RunningServer

DOC = Path(__file__).parents[2] / "docs" / "fake-gateway.md"


def documented_members() -> set[str]:
    """The names in the first column of the doc's member table (``name(...)`` -> ``name``)."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("| member | what it does |", 1)[1].split("\n\n", 1)[0]
    names: set[str] = set()
    for row in table.splitlines()[2:]:
        first_cell = row.split("|")[1]
        names |= {m.group(1) for m in re.finditer(r"`([a-z_]+)", first_cell)}
    return names


def test_every_documented_member_exists() -> None:
    names = documented_members()
    assert {"complete", "latency", "add_fault", "deliveries", "reset"} <= names
    server_only = {"port", "wait_for_deliveries", "stop"}
    for name in names - server_only:
        assert hasattr(FakeGateway, name) or hasattr(FakeGateway(), name), name
    for name in server_only:
        assert hasattr(RunningServer, name), name
    assert hasattr(InProcessGateway, "install_on")


def test_operations_are_the_states_own() -> None:
    gateway = FakeGateway()
    assert gateway.complete == gateway.state.complete
    assert gateway.add_fault == gateway.state.faults.add
    charge = gateway.create_charge(capture=False)  # authorized: complete() captures it
    assert gateway.complete(charge["id"])["status"] == "successful"


def test_settings_read_and_write_the_state() -> None:
    gateway = FakeGateway()
    gateway.latency = 1
    gateway.processing_delay = 0.5
    gateway.delivery_repeat = 0  # at least once
    gateway.delivery_include_id = False
    state = gateway.state
    assert (state.latency, state.processing_delay) == (1.0, 0.5)
    assert isinstance(state.latency, float)
    assert (state.delivery_repeat, state.delivery_include_id) == (1, False)
    gateway.reset()
    assert (gateway.latency, gateway.delivery_repeat, gateway.delivery_include_id) == (0, 1, True)
