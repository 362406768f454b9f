"""Webhook configurations (both path forms) and deliveries with retries."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from django_paycharge.testing import TEST_MERCHANT_ID, TEST_STORE_ID
from tests.waiting import GUARD

from .conftest import Gw, wait_deliveries

PREFIXES = [f"/stores/{TEST_STORE_ID}", f"/merchants/{TEST_MERCHANT_ID}/stores/{TEST_STORE_ID}"]


class Receiver:
    """Collects deliveries; answers the queued statuses, then 200."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        self.statuses: list[int] = []
        self.url = "http://shop.example/paycharge/webhook?src=fake"

    def record(self, path: str, headers: dict[str, str], body: bytes) -> int:
        self.received.append((path, headers, body))
        return self.statuses.pop(0) if self.statuses else 200

    def payloads(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, _, body in self.received]


@pytest.fixture
def receiver(gw: Gw) -> Iterator[Receiver]:
    rec = Receiver()
    if gw.kind == "inproc":
        gw.handle.set_transport(lambda url, headers, body: rec.record(url, headers, body))
        yield rec
        return

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = rec.record(self.path, dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    rec.url = f"http://127.0.0.1:{server.server_address[1]}/paycharge/webhook?src=fake"
    gw.handle.state.sender.retry_delays = (0.01,)
    yield rec
    server.shutdown()
    server.server_close()
    gw.handle.state.sender.retry_delays = (0.5, 1.0, 2.0)


def _config(**over: Any) -> dict[str, Any]:
    return {
        "triggers": ["charge_finished"],
        "url": "https://shop.example/hook",
        "auth_token": "tok-1",
        "active": True,
        **over,
    }


@pytest.mark.parametrize("prefix", PREFIXES)
def test_create_read_list_at_both_path_forms(gw: Gw, prefix: str) -> None:
    created = gw.post(prefix + "/webhooks", json=_config())
    assert created.status_code == 201, created.text
    config = created.json()
    assert set(config) == {
        "id",
        "platform_id",
        "merchant_id",
        "store_id",
        "triggers",
        "url",
        "active",
        "created_on",
        "updated_on",
        "is_integration",
        "auth_token",
    }
    assert config["auth_token"] == "tok-1" and config["merchant_id"] == TEST_MERCHANT_ID
    for other in PREFIXES:
        assert gw.get(f"{other}/webhooks/{config['id']}").json() == config
        listed = gw.get(f"{other}/webhooks").json()
        assert listed == {"items": [config], "has_more": False}


def test_registering_a_url_twice_is_a_conflict(gw: Gw) -> None:
    assert gw.post(PREFIXES[0] + "/webhooks", json=_config()).status_code == 201
    again = gw.post(PREFIXES[0] + "/webhooks", json=_config(auth_token="other"))
    assert again.status_code == 409
    assert again.json()["code"] == "WEBHOOK_URL_EXISTS"
    other_url = gw.post(PREFIXES[0] + "/webhooks", json=_config(url="https://shop.example/b"))
    assert other_url.status_code == 201


def test_webhook_list_pages(gw: Gw) -> None:
    urls = [f"https://shop.example/hook/{n}" for n in range(12)]
    ids = [gw.post(PREFIXES[0] + "/webhooks", json=_config(url=u)).json()["id"] for u in urls][::-1]
    first = gw.get(PREFIXES[1] + "/webhooks").json()
    assert [c["id"] for c in first["items"]] == ids[:10] and first["has_more"]
    rest = gw.get(PREFIXES[1] + "/webhooks", params={"cursor": ids[9]}).json()
    assert [c["id"] for c in rest["items"]] == ids[10:] and not rest["has_more"]


def test_webhook_validation_update_delete(gw: Gw) -> None:
    bad = gw.post(PREFIXES[0] + "/webhooks", json=_config(triggers=["nope"], url="not a url"))
    assert bad.status_code == 400
    assert {e["field"] for e in bad.json()["errors"]} == {"triggers", "url"}
    wrong_merchant = gw.get(f"/merchants/{TEST_STORE_ID}/stores/{TEST_STORE_ID}/webhooks")
    assert wrong_merchant.status_code == 404
    config = gw.post(PREFIXES[0] + "/webhooks", json=_config()).json()
    patched = gw.call("PATCH", f"{PREFIXES[0]}/webhooks/{config['id']}", json={"active": False})
    assert patched.json()["active"] is False
    assert gw.call("DELETE", f"{PREFIXES[1]}/webhooks/{config['id']}").status_code == 204
    assert gw.get(f"{PREFIXES[0]}/webhooks/{config['id']}").status_code == 404


def test_deliveries_on_status_changes(gw: Gw, receiver: Receiver) -> None:
    gw.handle.add_webhook(receiver.url, ["charge_updated", "charge_finished"], "hook-secret")
    inactive_url = receiver.url + ("&" if "?" in receiver.url else "?") + "inactive=1"
    gw.handle.add_webhook(inactive_url, ["charge_finished"], "inactive", active=False)
    charge = gw.charge(gw.token("konbini"))
    gw.read(charge["id"])
    gw.handle.complete(charge["id"])
    wait_deliveries(gw)
    payloads = receiver.payloads()
    assert [p["event"] for p in payloads] == ["charge_updated", "charge_updated", "charge_finished"]
    assert [p["data"]["status"] for p in payloads] == ["awaiting", "successful", "successful"]
    assert all(set(p) == {"id", "event", "created_on", "data"} for p in payloads)
    assert len({p["id"] for p in payloads}) == 3
    path, headers, _ = receiver.received[0]
    assert path.endswith("/paycharge/webhook?src=fake")
    lowered = {k.lower(): v for k, v in headers.items()} if isinstance(headers, dict) else {}
    if gw.kind == "server":
        assert lowered["authorization"] == "Bearer hook-secret"
        assert lowered["content-type"] == "application/json"
    else:
        assert headers["Authorization"] == "Bearer hook-secret"
    assert all(d.state == "delivered" for d in gw.handle.deliveries)


def test_failed_deliveries_are_retried_and_recorded(gw: Gw, receiver: Receiver) -> None:
    gw.handle.add_webhook(receiver.url, ["charge_finished"])
    receiver.statuses = [500, 503]
    gw.charge()
    wait_deliveries(gw)
    [delivery] = gw.handle.deliveries
    assert [a.status for a in delivery.attempts] == [500, 503, 200]
    assert delivery.state == "delivered"
    assert len(receiver.received) == 3
    assert len({json.loads(b)["id"] for _, _, b in receiver.received}) == 1
    receiver.statuses = [500] * 10
    gw.charge()
    wait_deliveries(gw)
    assert gw.handle.deliveries[-1].state == "failed"
    assert len(gw.handle.deliveries[-1].attempts) == gw.handle.state.sender.max_attempts


def test_unreachable_receiver_is_recorded(gw: Gw) -> None:
    def refuse(url: str, headers: dict[str, str], body: bytes) -> int:
        raise ConnectionError("refused")

    gw.handle.set_transport(refuse)
    gw.handle.add_webhook("http://127.0.0.1:9/nothing", ["charge_finished"])
    gw.charge()
    wait_deliveries(gw)
    [delivery] = gw.handle.deliveries
    assert delivery.state == "failed"
    assert all(a.status is None and "refused" in (a.error or "") for a in delivery.attempts)


def test_duplicates_and_missing_ids_for_dedupe_tests(gw: Gw, receiver: Receiver) -> None:
    gw.handle.add_webhook(receiver.url, ["charge_finished"])
    gw.handle.delivery_repeat = 2
    gw.charge()
    wait_deliveries(gw)
    ids = [p["id"] for p in receiver.payloads()]
    assert len(ids) == 2 and ids[0] == ids[1]
    gw.handle.redeliver(gw.handle.deliveries[0].id, without_id=True)
    wait_deliveries(gw)
    assert "id" not in receiver.payloads()[-1]
    gw.handle.delivery_repeat = 1
    gw.handle.delivery_include_id = False
    gw.charge()
    wait_deliveries(gw)
    assert "id" not in receiver.payloads()[-1]


def test_deliveries_wait_for_a_transport(fake_gateway: Any) -> None:
    fake_gateway.add_webhook("https://shop.example/hook", ["charge_finished"])
    fake_gateway.create_charge()
    assert [d.state for d in fake_gateway.deliveries] == ["pending"]
    sent: list[str] = []

    def transport(url: str, headers: Any, body: Any) -> int:
        sent.append(url)
        return 204

    fake_gateway.set_transport(transport)
    assert fake_gateway.flush_deliveries() == 1
    assert sent == ["https://shop.example/hook"]


def test_deliver_with_django_client(fake_gateway: Any) -> None:
    calls: list[tuple[str, bytes, dict[str, Any]]] = []

    class FakeClient:
        def post(self, path: str, data: bytes, content_type: str, **extra: Any) -> Any:
            calls.append((path, data, {"content_type": content_type, **extra}))
            return type("R", (), {"status_code": 200})()

    fake_gateway.deliver_with_django_client(FakeClient())
    fake_gateway.add_webhook("https://shop.example/hooks/pay?x=1", ["charge_finished"], "t0k")
    fake_gateway.create_charge()
    [(path, data, extra)] = calls
    assert path == "/hooks/pay?x=1"
    assert extra["content_type"] == "application/json"
    assert extra["HTTP_AUTHORIZATION"] == "Bearer t0k"
    assert json.loads(data)["event"] == "charge_finished"


def test_control_endpoint_lists_deliveries(fake_gateway_server: Any, receiver: Any = None) -> None:
    import requests

    fake_gateway_server.add_webhook("http://127.0.0.1:9/closed", ["charge_finished"])
    fake_gateway_server.state.sender.retry_delays = (0.0,)
    try:
        fake_gateway_server.create_charge()
        body = requests.get(  # the fake answers once its sender is idle: the wait is a guard
            fake_gateway_server.base_url + f"/_fake/deliveries?wait={GUARD}", timeout=GUARD + 30
        ).json()
    finally:
        fake_gateway_server.state.sender.retry_delays = (0.5, 1.0, 2.0)
    [item] = body["items"]
    assert item["event"] == "charge_finished" and item["state"] == "failed"
    assert item["attempts"][0]["error"]
