"""No credential, webhook token or account number in any log line, exception text or repr."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
import responses

from django_paycharge.client import PayChargeClient
from django_paycharge.client.observe import GatewayAttempt, GatewayCall
from django_paycharge.exceptions import NetworkError, PayChargeError

from .conftest import (
    ACCOUNT_NUMBER,
    BASE,
    CHARGE,
    JWT,
    SECRET,
    STORE,
    TOKEN,
    SleepRecorder,
    charge_json,
    make_client,
)

WEBHOOK_TOKEN = "whsec-Sup3rS3cret-token"
FORBIDDEN = (SECRET, JWT, JWT.split(".")[2], ACCOUNT_NUMBER, WEBHOOK_TOKEN)
LOGGERS = ("django_paycharge", "requests", "urllib3")


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _leaks(text: str) -> list[str]:
    return [s for s in FORBIDDEN if s in text]


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    return (
        "\n".join(f"{r.name} {r.getMessage()} {r.__dict__!r}" for r in caplog.records) + caplog.text
    )


def _run_everything(client: PayChargeClient) -> list[BaseException]:
    calls: list[Callable[[], Any]] = [
        lambda: client.charges.create(transaction_token_id=TOKEN, amount=10, currency="JPY"),
        lambda: client.charges.retrieve(STORE, CHARGE),
        lambda: client.charges.retrieve(STORE, CHARGE),
        lambda: client.charges.retrieve(STORE, CHARGE),
        lambda: client.issuer_tokens.retrieve(STORE, CHARGE),
        lambda: repr(client.issuer_tokens.retrieve(STORE, CHARGE)),
        lambda: client.webhooks.create(
            STORE, url="https://shop.example/hook", triggers=["x"], auth_token=WEBHOOK_TOKEN
        ),
        lambda: client.charges.create(transaction_token_id="bad", amount=-1, currency="x"),
        lambda: list(client.charges.list(email="a@b.example")),
    ]
    errors: list[BaseException] = []
    for call in calls:
        try:
            result = call()
        except PayChargeError as exc:
            errors.append(exc)
        else:
            errors.append(Exception(repr(result)))  # scanned as well
    return errors


def test_no_secret_in_logs_or_errors(
    debug_logs: pytest.LogCaptureFixture, rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    observed: list[str] = []  # everything the client tells an observer (metrics, spans)

    @contextmanager
    def observer(call: GatewayCall) -> Iterator[Callable[[GatewayAttempt], None]]:
        observed.append(repr(call))
        yield lambda attempt: observed.append(repr(attempt))

    client = make_client(sleeps, max_retries=1, observer=observer)
    echo = {
        "status": "error",
        "code": "NOT_AUTHENTICATED",
        "errors": [{"field": "Authorization", "reason": f"bad token Bearer {SECRET}.{JWT}"}],
    }
    rsps.post(f"{BASE}/charges", status=401, json=echo)
    url = f"{BASE}/stores/{STORE}/charges/{CHARGE}"
    rsps.get(url, body=requests.ConnectionError(f"boom {BASE}"))
    rsps.get(url, status=503, body="<html>proxy</html>")
    rsps.get(url, status=404, json={"code": "RESOURCE_NOT_FOUND", "errors": [{"reason": JWT}]})
    rsps.get(url, body=requests.ReadTimeout("slow"))
    rsps.get(url, json=charge_json())
    token = {"payment_type": "bank_transfer", "account_number": ACCOUNT_NUMBER}
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}/issuer_token", json=token)
    hook = {"id": CHARGE, "auth_token": WEBHOOK_TOKEN, "triggers": []}
    rsps.post(f"{BASE}/stores/{STORE}/webhooks", status=201, json=hook)
    rsps.get(f"{BASE}/charges", json={"items": [], "has_more": False})

    errors = _run_everything(client)

    assert len(rsps.calls) >= 8
    texts = [f"{e!s} {e!r} {e.args!r} {getattr(e, 'errors', '')!r}" for e in errors]
    assert all(_leaks(t) == [] for t in texts), [t for t in texts if _leaks(t)]
    assert any("[redacted]" in t for t in texts)  # the echoed token was seen and removed
    log = _log_text(debug_logs)
    assert "django_paycharge.client" in log  # the scan saw real log lines
    assert "a@b.example" not in log  # personal filter values are masked
    assert _leaks(log) == []
    assert _leaks(repr(client)) == []
    assert _leaks(repr(client._transport)) == []
    assert len(observed) > 10 and any("RESOURCE_NOT_FOUND" in o for o in observed)
    assert _leaks("\n".join(observed)) == []
    assert not any(str(CHARGE) in o or "a@b.example" in o for o in observed)  # routes only


def test_one_log_line_per_attempt(
    debug_logs: pytest.LogCaptureFixture, rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    client = make_client(sleeps, max_retries=2)
    url = f"{BASE}/stores/{STORE}/charges/{CHARGE}"
    rsps.get(url, status=503, headers={"X-Request-Id": "rid-1"})
    rsps.get(url, body=requests.ConnectionError("down"))
    rsps.get(url, json=charge_json(), headers={"X-Request-Id": "rid-3"})
    client.charges.retrieve(STORE, CHARGE)
    lines = [r for r in debug_logs.records if r.name == "django_paycharge.client"]
    assert len(lines) == 3
    assert [r.paycharge_attempt for r in lines] == [1, 2, 3]  # type: ignore[attr-defined]
    assert [r.paycharge_status for r in lines] == [503, "ConnectionError", 200]  # type: ignore[attr-defined]
    assert [r.levelno for r in lines] == [logging.WARNING, logging.WARNING, logging.DEBUG]
    first = lines[0].getMessage()
    assert first.startswith(f"GET /stores/{STORE}/charges/{CHARGE} -> 503 in ")
    assert "attempt 1" in first and "rid-1" in first
    assert "rid-3" in lines[2].getMessage()
    assert lines[0].paycharge_duration_ms >= 0  # type: ignore[attr-defined]


# A real server on 127.0.0.1, so urllib3's own logging runs (responses bypasses it).


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def _answer(self) -> None:
        type(self).seen.append(dict(self.headers.items()))
        if "slow" in self.path:
            time.sleep(0.6)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps(charge_json()).encode()
        try:
            self.send_response(201 if self.command == "POST" else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Request-Id", "live-1")
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (read time-out test)
            pass

    do_GET = _answer
    do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def local_gateway() -> Iterator[str]:
    _Handler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_local_gateway_urllib3_debug_logs_no_secret(
    local_gateway: str, debug_logs: pytest.LogCaptureFixture
) -> None:
    with PayChargeClient(base_url=local_gateway, secret=SECRET, jwt=JWT) as client:
        charge = client.charges.create(transaction_token_id=TOKEN, amount=10, currency="JPY")
        client.charges.retrieve(STORE, CHARGE, polling=True)
    assert str(charge.id) == CHARGE
    assert _Handler.seen[0]["Authorization"] == f"Bearer {SECRET}.{JWT}"
    assert _Handler.seen[0]["Content-Type"] == "application/json"
    urllib3_lines = [r for r in debug_logs.records if r.name.startswith("urllib3")]
    assert urllib3_lines  # urllib3 did log at DEBUG
    assert _leaks(_log_text(debug_logs)) == []


def test_local_gateway_read_timeout_retried_then_network_error(
    local_gateway: str, debug_logs: pytest.LogCaptureFixture
) -> None:
    sleeps = SleepRecorder()
    client = PayChargeClient(
        base_url=local_gateway + "/slow",
        secret=SECRET,
        jwt=JWT,
        timeout=(1.0, 0.2),
        max_retries=1,
        sleep=sleeps,
    )
    with pytest.raises(NetworkError) as info:
        client.charges.retrieve(STORE, CHARGE)
    assert len(_Handler.seen) == 2
    assert len(sleeps.calls) == 1
    assert _leaks(f"{info.value!s} {info.value!r} {info.value.__cause__!r}") == []
    assert _leaks(_log_text(debug_logs)) == []
