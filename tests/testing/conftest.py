"""Both front ends behind one fixture: tests talk plain ``requests`` to ``gw.base_url``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID, FakeGateway
from tests import waiting

AUTH = {"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"}


class Gw:
    """A front end under test: its handle, its base URL and a session with the test credentials."""

    def __init__(self, handle: FakeGateway, kind: str) -> None:
        self.handle = handle
        self.kind = kind
        self.base_url = handle.base_url
        self.session = requests.Session()
        self.session.headers.update(AUTH)

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 10)
        return self.session.request(method, self.base_url + path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("POST", path, **kwargs)

    def token(self, payment_type: str = "card", **data: Any) -> str:
        return str(self.handle.create_transaction_token(payment_type, **data)["id"])

    def charge(self, token_id: str | None = None, **fields: Any) -> dict[str, Any]:
        body = {"transaction_token_id": token_id or self.token(), "amount": 1000, "currency": "JPY"}
        body.update(fields)
        answer = self.post("/charges", json=body)
        assert answer.status_code == 201, answer.text
        result: dict[str, Any] = answer.json()
        return result

    def read(self, charge_id: str, **params: str) -> dict[str, Any]:
        answer = self.get(f"/stores/{TEST_STORE_ID}/charges/{charge_id}", params=params)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result


@pytest.fixture(params=["inproc", "server"])
def gw(request: pytest.FixtureRequest) -> Iterator[Gw]:
    name = "fake_gateway" if request.param == "inproc" else "fake_gateway_server"
    env = Gw(request.getfixturevalue(name), request.param)
    env.handle.state.sender.retry_delays = (0.01,)  # real sleeps between retries, kept short
    yield env
    env.session.close()


def wait_deliveries(gw: Gw) -> None:
    """Server deliveries go out from a worker thread: wait until they settle."""
    waiting.wait_deliveries(gw.handle)


@pytest.fixture
def sdk(fake_gateway_server: Any) -> Any:
    """The official Python SDK's client (univapay-client-sdk) on the fake gateway's server,
    with the test store's app token."""
    from univapayclientsdk.http.auth.oauth_2 import BearerAuthCredentials
    from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

    return UnivapayClientSdkClient(
        base_url=fake_gateway_server.base_url,
        bearer_auth_credentials=BearerAuthCredentials(TEST_SECRET, TEST_JWT),
    )
