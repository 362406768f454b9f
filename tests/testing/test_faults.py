"""Injected faults through both front ends: statuses, latency, drops, malformed bodies."""

from __future__ import annotations

import json
import time

import pytest
import requests

from django_paycharge.testing import FakeGateway
from tests.waiting import wait_until

from .conftest import Gw


@pytest.mark.parametrize(
    ("status", "code"),
    [(500, "UNKNOWN_ERROR"), (503, "SERVICE_UNAVAILABLE_TRY_AGAIN"), (504, "TIMEOUT")],
)
def test_status_fault_in_gateway_format_then_recovers(gw: Gw, status: int, code: str) -> None:
    gw.handle.add_fault("GET", r"^/charges$", action="status", status=status, count=2)
    for _ in range(2):
        answer = gw.get("/charges")
        assert answer.status_code == status
        assert answer.json() == {"status": "error", "code": code, "errors": []}
        assert answer.headers["X-Request-Id"]
    assert gw.get("/charges").status_code == 200


def test_rate_limited_with_retry_after(gw: Gw) -> None:
    gw.handle.add_fault("*", r"/charges", action="status", status=429, retry_after=7, count=1)
    answer = gw.post("/charges", json={})
    assert answer.status_code == 429
    assert answer.json() == {}  # the gateway documents an empty object for a 429
    assert answer.headers["Retry-After"] == "7"
    assert len(gw.handle.charges) == 0


def test_fault_on_other_paths_does_not_apply(gw: Gw) -> None:
    gw.handle.add_fault("POST", r"^/charges$", action="status", status=500)
    assert gw.get("/charges").status_code == 200
    assert gw.handle.charges is not None


def test_drop_before_does_no_work(gw: Gw) -> None:
    token = gw.token()
    gw.handle.add_fault("POST", r"^/charges$", action="drop_before", count=1)
    with pytest.raises(requests.ConnectionError):
        gw.post("/charges", json={"transaction_token_id": token, "amount": 1000, "currency": "JPY"})
    assert len(gw.handle.charges) == 0


def test_drop_after_does_the_work_and_the_key_replays(gw: Gw) -> None:
    body = {"transaction_token_id": gw.token(), "amount": 1000, "currency": "JPY"}
    gw.handle.add_fault("POST", r"^/charges$", action="drop_after", count=1)
    with pytest.raises(requests.ConnectionError):
        gw.post("/charges", json=body, headers={"Idempotency-Key": "lost"})
    assert len(gw.handle.charges) == 1
    retry = gw.post("/charges", json=body, headers={"Idempotency-Key": "lost"})
    assert retry.status_code == 201
    assert retry.headers["Idempotency-Status"] == "retrieved_idempotent_response"
    assert retry.json()["id"] in gw.handle.charges
    assert len(gw.handle.charges) == 1


def test_malformed_body(gw: Gw) -> None:
    gw.handle.add_fault("GET", r"^/charges$", action="malformed", count=1)
    answer = gw.get("/charges")
    assert answer.status_code == 200
    with pytest.raises(ValueError):
        json.loads(answer.content)


def test_latency(gw: Gw) -> None:
    fault = gw.handle.add_fault("GET", r"^/charges$", action="latency", latency=0.3, count=1)
    started = time.monotonic()
    assert gw.get("/charges").status_code == 200
    assert time.monotonic() - started >= 0.3
    # count=1: used up, so the next request meets no fault and does not wait.
    assert gw.get("/charges").status_code == 200
    assert fault.fired == 1 and fault not in gw.handle.state.faults.list()


def test_latency_beyond_the_read_timeout_times_out_after_the_work(gw: Gw) -> None:
    body = {"transaction_token_id": gw.token(), "amount": 1000, "currency": "JPY"}
    gw.handle.add_fault("POST", r"^/charges$", action="latency", latency=0.8, count=1)
    with pytest.raises(requests.ReadTimeout):
        gw.post("/charges", json=body, timeout=(2, 0.3))
    # The server finishes the work after the client gave up.
    wait_until(lambda: gw.handle.charges, "the gateway to finish the create", every=0.05)
    assert len(gw.handle.charges) == 1


def test_probability_is_deterministic_under_a_seed() -> None:
    def pattern(seed: int) -> list[int]:
        gateway = FakeGateway()
        gateway.add_fault(
            "GET", "/charges", action="status", status=503, probability=0.5, seed=seed
        )
        return [gateway.request("GET", "/charges").status for _ in range(40)]

    first = pattern(3)
    assert first == pattern(3)
    assert first != pattern(4)
    assert 8 < first.count(503) < 32


def test_probability_through_http(gw: Gw) -> None:
    gw.handle.add_fault("GET", "/charges", action="status", status=503, probability=0.5, seed=1)
    statuses = [gw.get("/charges").status_code for _ in range(20)]
    expected = FakeGateway()
    expected.add_fault("GET", "/charges", action="status", status=503, probability=0.5, seed=1)
    assert statuses == [expected.request("GET", "/charges").status for _ in range(20)]


def test_clear_faults_and_control_endpoint(fake_gateway_server: FakeGateway) -> None:
    base = fake_gateway_server.base_url
    added = requests.post(
        base + "/_fake/faults",
        json={"method": "GET", "path": "^/charges$", "action": "status", "status": 500},
        timeout=5,
    )
    assert added.status_code == 201
    assert requests.get(base + "/charges", timeout=5).status_code == 500
    assert requests.get(base + "/_fake/faults", timeout=5).json()["items"][0]["fired"] == 1
    assert requests.post(base + "/_fake/faults", json={"clear": True}, timeout=5).status_code == 200
    assert requests.get(base + "/charges", timeout=5).status_code == 401  # normal again (no auth)
    bad = requests.post(base + "/_fake/faults", json={"action": "explode"}, timeout=5)
    assert bad.status_code == 400


def test_bad_fault_options_raise() -> None:
    gateway = FakeGateway()
    with pytest.raises(ValueError):
        gateway.add_fault("GET", ".*", action="status")
    with pytest.raises(ValueError):
        gateway.add_fault("GET", ".*", action="teleport")
