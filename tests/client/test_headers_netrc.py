"""requests must never swap our Authorization header for ~/.netrc credentials."""

from __future__ import annotations

import responses

from django_paycharge.client import PayChargeClient

BASE = "https://gw.example.test"
STORE = "11111111-1111-4111-8111-111111111111"
CHARGE = "22222222-2222-4222-8222-222222222222"
JWT = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln"


def test_a_netrc_entry_for_the_gateway_does_not_replace_our_header(tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine gw.example.test login someone password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    for session in (None, __import__("requests").Session()):
        client = PayChargeClient(base_url=BASE, secret="sek", jwt=JWT, session=session)
        with responses.RequestsMock() as mock:
            mock.get(f"{BASE}/stores/{STORE}/tokens/{CHARGE}", json={"id": CHARGE}, status=200)
            client.tokens.retrieve(STORE, CHARGE)
            sent = mock.calls[0].request.headers["Authorization"]
        assert sent == f"Bearer sek.{JWT}"


def test_proxies_from_the_environment_are_read_once(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.test:3128")
    client = PayChargeClient(base_url=BASE, secret="sek", jwt=JWT)
    assert client.session.trust_env is False
    assert client.session.proxies["https"] == "http://proxy.example.test:3128"
