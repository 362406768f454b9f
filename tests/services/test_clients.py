"""Each account's client is built from that account's options, app-wide ones filling the gaps."""

from __future__ import annotations

import uuid
from typing import cast

import responses
from requests.adapters import HTTPAdapter

from django_paycharge import services
from django_paycharge.testing import TEST_BASE_URL, TEST_JWT, TEST_STORE_ID

CHARGE = uuid.uuid4()


def test_each_accounts_client_follows_its_own_options(settings):
    tokyo = {
        "SECRET": "tokyo-secret",
        "JWT": TEST_JWT,
        "STORE_ID": TEST_STORE_ID,
        "USER_AGENT": "tokyo-shop/2",
        "POLLING_TIMEOUT": 12,
        "POOL_SIZE": 3,
    }
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "BASE_URL": TEST_BASE_URL,
        "POOL_SIZE": 7,
        "TIMEOUT": (2, 9),
        "ACCOUNTS": {"tokyo": tokyo},
    }
    url = f"{TEST_BASE_URL}/stores/{TEST_STORE_ID}/charges/{CHARGE}"
    body = {"id": str(CHARGE), "store_id": TEST_STORE_ID, "status": "pending"}
    with responses.RequestsMock() as rsps:
        rsps.get(url, json=body)
        services.get_client("tokyo").charges.retrieve(TEST_STORE_ID, CHARGE, polling=True)
        services.get_client().charges.retrieve(TEST_STORE_ID, CHARGE, polling=True)
        tokyo_call, default_call = (call.request for call in rsps.calls)
    assert tokyo_call.headers["User-Agent"] == "tokyo-shop/2"
    # responses sets req_kwargs (what requests was asked for) at run time: not in its types.
    # Its polling, the app-wide connect:
    assert tokyo_call.req_kwargs["timeout"] == (2.0, 12.0)  # type: ignore[attr-defined]
    assert default_call.headers["User-Agent"].startswith("django-paycharge/")
    assert default_call.req_kwargs["timeout"] == (2.0, 60.0)  # type: ignore[attr-defined]
    pools = {
        name: cast(
            HTTPAdapter, services.get_client(name).session.get_adapter(url)
        ).poolmanager.connection_pool_kw["maxsize"]
        for name in ("tokyo", "default")
    }
    assert pools == {"tokyo": 3, "default": 7}
