"""Credentials, content type, idempotency key and time-outs on the wire."""

from __future__ import annotations

import json
import uuid
from typing import Any

import requests
import responses

from django_paycharge.client import PayChargeClient

from .conftest import BASE, CHARGE, JWT, SECRET, STORE, TOKEN, SleepRecorder, charge_json


def _create(client: PayChargeClient, **extra: Any) -> None:
    client.charges.create(transaction_token_id=TOKEN, amount=1000, currency="JPY", **extra)


def test_post_headers_are_exact(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    _create(client)
    headers = rsps.calls[0].request.headers
    assert headers["Authorization"] == f"Bearer {SECRET}.{JWT}"
    assert headers["Content-Type"] == "application/json"
    assert headers["Accept"] == "application/json"
    assert headers["User-Agent"].startswith("django-paycharge/")
    key = uuid.UUID(headers["Idempotency-Key"])
    assert key.version == 4
    assert str(key) == headers["Idempotency-Key"]


def test_get_headers_have_auth_and_no_body_headers(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}", json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    headers = rsps.calls[0].request.headers
    assert headers["Authorization"] == f"Bearer {SECRET}.{JWT}"
    assert "Content-Type" not in headers
    assert "Idempotency-Key" not in headers
    assert rsps.calls[0].request.body is None


def test_fresh_idempotency_key_per_call(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    _create(client)
    _create(client)
    keys = {call.request.headers["Idempotency-Key"] for call in rsps.calls}
    assert len(keys) == 2


def test_callers_idempotency_key_is_sent(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    _create(client, idempotency_key="order-42-attempt-1")
    assert rsps.calls[0].request.headers["Idempotency-Key"] == "order-42-attempt-1"


def test_create_body_omits_nones_and_nests(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    _create(
        client,
        capture=False,
        capture_at="2030-01-02T03:04:05+09:00",
        merchant_transaction_id="order-42",
        ip_address="192.0.2.7",
        metadata={"order": 42, "note": None},
        redirect_endpoint="https://shop.example/return?a=1",
        three_ds_mode="skip",
    )
    sent_body = rsps.calls[0].request.body
    assert sent_body is not None
    body = json.loads(sent_body)
    assert body == {
        "transaction_token_id": TOKEN,
        "amount": 1000,
        "currency": "JPY",
        "capture": False,
        "capture_at": "2030-01-02T03:04:05+09:00",
        "merchant_transaction_id": "order-42",
        "client_metadata": {"ip_address": "192.0.2.7"},
        "metadata": {"order": 42, "note": None},
        "redirect": {"endpoint": "https://shop.example/return?a=1"},
        "three_ds": {"mode": "skip"},
    }


def test_minimal_create_body(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    client.charges.create(transaction_token_id=uuid.UUID(TOKEN), amount=5, currency="usd")
    sent_body = rsps.calls[0].request.body
    assert sent_body is not None
    body = json.loads(sent_body)
    assert body == {"transaction_token_id": TOKEN, "amount": 5, "currency": "USD"}


class _RecordingSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[Any] = []

    def request(self, *args: Any, **kwargs: Any) -> Any:
        self.timeouts.append(kwargs.get("timeout"))
        return super().request(*args, **kwargs)


def test_timeouts_on_every_request_and_longer_for_polling(rsps: responses.RequestsMock) -> None:
    session = _RecordingSession()
    client = PayChargeClient(
        base_url=BASE,
        secret=SECRET,
        jwt=JWT,
        timeout=(2.0, 7.0),
        session=session,
        polling_timeout=45.0,
        sleep=SleepRecorder(),
    )
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}", json=charge_json())
    rsps.post(f"{BASE}/charges", json=charge_json(), status=201)
    client.charges.retrieve(STORE, CHARGE)
    client.charges.retrieve(STORE, CHARGE, polling=True)
    _create(client)
    assert session.timeouts == [(2.0, 7.0), (2.0, 45.0), (2.0, 7.0)]
    assert str(rsps.calls[1].request.url).endswith("?polling=true")
    assert "polling" not in str(rsps.calls[0].request.url)


def test_single_number_timeout_is_both() -> None:
    session = _RecordingSession()
    client = PayChargeClient(base_url=BASE, secret=SECRET, jwt=JWT, timeout=3, session=session)
    with responses.RequestsMock() as mock:
        mock.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}", json=charge_json())
        client.charges.retrieve(STORE, CHARGE)
    assert session.timeouts == [(3.0, 3.0)]


def test_injected_session_keeps_no_credentials(rsps: responses.RequestsMock) -> None:
    session = requests.Session()
    client = PayChargeClient(base_url=BASE, secret=SECRET, jwt=JWT, session=session)
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}", json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    assert client.session is session
    assert "Authorization" not in session.headers
    client.close()  # a given session is the caller's: still usable afterwards
    assert session.adapters


def test_own_session_is_pooled() -> None:
    client = PayChargeClient(base_url=BASE + "/", secret=SECRET, jwt=JWT, pool_size=32)
    adapter = client.session.get_adapter("https://gw.paycharge.test/charges")
    assert adapter._pool_maxsize == 32  # type: ignore[attr-defined]
    assert client.base_url == BASE
    assert repr(client) == f"PayChargeClient(base_url={BASE!r})"
