"""Fixtures of the client tests: a client with pinned jitter and a recording sleep."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import responses

from django_paycharge.client import PayChargeClient

BASE = "https://gw.paycharge.test"
SECRET = "sk-Secret-9f8e7d6c5b4a"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjbGllbnQtdGVzdHMifQ.c2lnLW9mLWNsaWVudC10ZXN0cw"
)
ACCOUNT_NUMBER = "7654321098"
STORE = "11111111-1111-4111-8111-111111111111"
CHARGE = "33333333-3333-4333-8333-333333333333"
TOKEN = "44444444-4444-4444-8444-444444444444"
MERCHANT = "22222222-2222-4222-8222-222222222222"
WEBHOOK = "55555555-5555-4555-8555-555555555555"

CHARGE_JSON: dict[str, Any] = {
    "id": CHARGE,
    "store_id": STORE,
    "transaction_token_id": TOKEN,
    "transaction_token_type": "one_time",
    "subscription_id": None,
    "merchant_transaction_id": "order-42",
    "requested_amount": 1000,
    "requested_currency": "USD",
    "requested_amount_formatted": 10.0,
    "charged_amount": None,
    "charged_currency": None,
    "charged_amount_formatted": None,
    "fee_amount": None,
    "fee_currency": None,
    "fee_amount_formatted": None,
    "only_direct_currency": False,
    "capture_at": None,
    "descriptor": None,
    "descriptor_phone_number": None,
    "status": "pending",
    "error": None,
    "metadata": {"order": "42"},
    "mode": "test",
    "created_on": "2024-05-06T07:08:09.123456Z",
    "redirect": {
        "endpoint": "https://shop.example/return?x=1",
        "redirect_id": "66666666-6666-4666-8666-666666666666",
    },
    "merchant_name": "Shop",
    "store_name": "Main store",
    "three_ds": {"redirect_endpoint": None, "mode": "normal"},
}


def charge_json(**overrides: Any) -> dict[str, Any]:
    """A full charge body, with some fields replaced."""
    body = copy.deepcopy(CHARGE_JSON)
    body.update(overrides)
    return body


class SleepRecorder:
    """Stands in for ``time.sleep``: records the delays instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


def make_client(sleeps: SleepRecorder, jitter: float = 1.0, **options: Any) -> PayChargeClient:
    """A client whose jitter factor is pinned to ``jitter`` and whose sleeps are recorded."""
    return PayChargeClient(
        base_url=BASE, secret=SECRET, jwt=JWT, sleep=sleeps, random=lambda: jitter, **options
    )


@pytest.fixture
def client(sleeps: SleepRecorder) -> Iterator[PayChargeClient]:
    with make_client(sleeps) as c:
        yield c


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock
