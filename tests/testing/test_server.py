"""The HTTP server: CLI start and stop, controls under /_fake/, CORS, concurrency."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID, make_jwt
from tests.waiting import wait_exit

from .conftest import AUTH, Gw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "django_paycharge.testing.server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+)", first)
    assert match, first + (process.stderr.read() if process.stderr else "")
    return process, match.group(1)


@pytest.fixture
def cli_server() -> Iterator[tuple[subprocess.Popen[str], str]]:
    jwt = make_jwt({"sub": "cli"})
    process, url = _start("--secret", "cli-secret", "--jwt", jwt, "--seed", "25")
    yield process, url
    if process.poll() is None:
        process.kill()
        process.wait(5)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_cli_prints_credentials_and_stops_cleanly(signum: int) -> None:
    jwt = make_jwt({"sub": "cli"})
    process, url = _start("--secret", "cli-secret", "--jwt", jwt, "--seed", "25")
    try:
        assert process.stdout is not None
        banner = "".join(process.stdout.readline() for _ in range(6))
        assert "SECRET=cli-secret" in banner and f"JWT={jwt}" in banner
        auth = {"Authorization": f"Bearer cli-secret.{jwt}"}
        body = requests.get(url + "/charges", headers=auth, timeout=5).json()
        assert body["total_hits"] == 25
        assert requests.get(url + "/charges", headers=AUTH, timeout=5).status_code == 401
        process.send_signal(signum)
        assert wait_exit(process, "the server to stop on the signal") == 0
    finally:
        if process.poll() is None:
            process.kill()
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/charges", timeout=2)


def test_cli_registers_the_shops_webhook() -> None:
    hook = "http://127.0.0.1:9/payments/webhook/"
    process, url = _start("--webhook", hook, "--webhook-token", "shop-token")
    try:
        auth = {"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"}
        listed = requests.get(f"{url}/stores/{TEST_STORE_ID}/webhooks", headers=auth, timeout=5)
        [config] = listed.json()["items"]
        assert config["url"] == hook and config["active"]
        # README's triggers: a refund or a cancel, answered pending, is ended by its event.
        assert config["triggers"] == [
            "charge_updated", "charge_finished", "refund_finished", "cancel_finished"
        ]  # fmt: skip
    finally:
        process.terminate()
        assert wait_exit(process, "the server to stop on the signal") == 0


def test_controls_over_http(fake_gateway_server: Any) -> None:
    base = fake_gateway_server.base_url
    token = requests.post(
        base + "/_fake/tokens",
        json={
            "payment_type": "konbini",
            "data": {"customer_name": "A", "convenience_store": "lawson"},
        },
        timeout=5,
    ).json()
    charges = []
    for _ in range(3):
        answer = requests.post(
            base + "/charges",
            headers=AUTH,
            timeout=5,
            json={"transaction_token_id": token["id"], "amount": 500, "currency": "JPY"},
        )
        charges.append(answer.json()["id"])
    assert (
        requests.get(f"{base}/_fake/charges/{charges[0]}", timeout=5).json()["status"] == "awaiting"
    )
    done = requests.post(f"{base}/_fake/charges/{charges[0]}/complete", timeout=5)
    assert done.json()["status"] == "successful"
    failed = requests.post(f"{base}/_fake/charges/{charges[1]}/fail", json={"code": 330}, timeout=5)
    assert failed.json()["error"]["code"] == 330
    assert (
        requests.post(f"{base}/_fake/charges/{charges[2]}/expire", timeout=5).json()["status"]
        == "canceled"
    )
    again = requests.post(f"{base}/_fake/charges/{charges[2]}/complete", timeout=5)
    assert again.status_code == 409
    seeded = requests.post(base + "/_fake/seed", json={"count": 1000}, timeout=10).json()
    assert seeded["created"] == 1000
    total = requests.get(base + "/charges", headers=AUTH, timeout=5).json()["total_hits"]
    assert total == 1003
    log = requests.get(base + "/_fake/requests", timeout=5).json()["items"]
    assert log and all("authorization" not in entry["headers"] for entry in log)
    assert requests.post(base + "/_fake/reset", timeout=5).json() == {"reset": True}
    assert requests.get(base + "/charges", headers=AUTH, timeout=5).json()["total_hits"] == 0
    assert requests.post(base + "/_fake/seed", json={"count": -1}, timeout=5).status_code == 400


def test_cors_preflight_and_headers(fake_gateway_server: Any) -> None:
    base = fake_gateway_server.base_url
    preflight = requests.options(
        base + "/tokens",
        timeout=5,
        headers={
            "Origin": "https://shop.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    allowed = preflight.headers["Access-Control-Allow-Headers"]
    assert {"Authorization", "Content-Type", "Idempotency-Key"} <= {
        h.strip() for h in allowed.split(",")
    }
    answer = requests.post(
        base + "/tokens",
        headers={"Authorization": f"Bearer {TEST_JWT}", "Origin": "https://shop.example"},
        json={"payment_type": "bank_transfer", "email": "a@example.com"},
        timeout=5,
    )
    assert answer.status_code == 201
    assert answer.headers["Access-Control-Allow-Origin"] == "*"


def test_concurrent_clients(fake_gateway_server: Any) -> None:
    base = fake_gateway_server.base_url
    errors: list[str] = []

    def client() -> None:
        with requests.Session() as session:
            session.headers.update(AUTH)
            for _ in range(20):
                token = fake_gateway_server.create_transaction_token()["id"]
                answer = session.post(
                    base + "/charges",
                    timeout=10,
                    json={"transaction_token_id": token, "amount": 100, "currency": "JPY"},
                )
                if answer.status_code != 201:
                    errors.append(answer.text)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(fake_gateway_server.charges) == 160


def test_chunked_request_body(fake_gateway_server: Any) -> None:
    token = fake_gateway_server.create_transaction_token()["id"]
    body = f'{{"transaction_token_id": "{token}", "amount": 100, "currency": "JPY"}}'.encode()
    answer = requests.post(
        fake_gateway_server.base_url + "/charges",
        headers={**AUTH, "Content-Type": "application/json"},
        data=iter([body[:10], body[10:]]),
        timeout=5,
    )
    assert answer.status_code == 201, answer.text


def test_server_fixture_points_settings(fake_gateway_server: Any, settings: Any) -> None:
    assert settings.PAYCHARGE["BASE_URL"] == fake_gateway_server.base_url
    assert settings.PAYCHARGE["SECRET"] == TEST_SECRET


def test_in_process_fixture_points_settings(fake_gateway: Any, settings: Any) -> None:
    from django_paycharge.conf import get_account

    account = get_account()
    assert account.base_url == fake_gateway.base_url
    assert str(account.store_id) == TEST_STORE_ID
    assert account.secret == TEST_SECRET and account.jwt == TEST_JWT


def test_in_process_routes_only_the_base_url(fake_gateway: Any) -> None:
    with pytest.raises(requests.ConnectionError):
        requests.get("https://elsewhere.example/", timeout=5)
    fake_gateway.mock.add("GET", "https://elsewhere.example/", body="ok")
    assert requests.get("https://elsewhere.example/", timeout=5).text == "ok"


def test_requests_log_in_process(gw: Gw) -> None:
    gw.get("/charges", params={"limit": "10"})
    [entry] = [e for e in gw.handle.requests_log if e["path"] == "/charges"]
    assert entry["method"] == "GET" and entry["query"] == "limit=10"
    assert "authorization" not in {k.lower() for k in entry["headers"]}


def test_free_ports_come_from_below_the_ephemeral_range() -> None:
    """A port found by binding port 0 is an ephemeral one, which any process's outgoing
    connection could take before the server started (CI once talked to another lane's
    fake gateway that way): ports for servers started later come from below that range."""
    from django_paycharge.testing.server import _ephemeral_low, free_port

    low = _ephemeral_low()
    ports = {free_port() for _ in range(20)}
    assert all(10_000 <= port < max(low, 11_000) for port in ports), (sorted(ports), low)
    assert len(ports) > 1  # picked at random, not the same one for every caller
