"""The fake's latency control: every API request waits, list pages and reads alike."""

from __future__ import annotations

import time

import requests

from django_paycharge.testing import TEST_STORE_ID

from .conftest import Gw


def _took(call) -> float:
    started = time.monotonic()
    answer = call()
    assert answer.status_code in (200, 201), answer.text
    return time.monotonic() - started


def test_every_list_path_and_read_waits_the_latency(gw: Gw) -> None:
    charge = gw.charge()
    gw.handle.latency = 0.25
    paths = [
        "/charges",
        f"/stores/{TEST_STORE_ID}/charges",
        f"/stores/{TEST_STORE_ID}/charges/{charge['id']}",
        f"/stores/{TEST_STORE_ID}/webhooks",
    ]
    for path in paths:
        assert _took(lambda p=path: gw.get(p)) >= 0.25, path
    assert _took(lambda: gw.charge() and gw.get("/charges")) >= 0.5  # a write, then a list


def test_the_controls_never_wait_and_a_latency_fault_adds_to_it(gw: Gw) -> None:
    gw.handle.latency = 0.2
    gw.handle.add_fault("GET", r"^/charges$", action="latency", latency=0.2, count=1)
    assert _took(lambda: gw.get("/charges")) >= 0.4
    gw.handle.latency = 5.0
    # A control answers at once: a test must be able to turn the latency off again.
    answer = requests.post(f"{gw.base_url}/_fake/latency", json={"seconds": 0}, timeout=4)
    assert answer.json() == {"seconds": 0.0}
    assert gw.handle.latency == 0.0


def test_the_latency_control_refuses_what_is_not_a_number_of_seconds(gw: Gw) -> None:
    for bad in ("1", -1, 61, True, None):
        answer = requests.post(f"{gw.base_url}/_fake/latency", json={"seconds": bad}, timeout=4)
        assert answer.status_code == 400, bad
    gw.handle.latency = 0.1
    gw.handle.reset()
    assert gw.handle.latency == 0.0
