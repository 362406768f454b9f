"""wait_for_charge stays within its time-out, and never hammers a gateway that does not hold."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

import pytest
import requests
import responses

from django_paycharge import services
from django_paycharge.models import Charge
from django_paycharge.testing import TEST_BASE_URL, TEST_STORE_ID

pytestmark = pytest.mark.django_db


def _pending_charge(gateway) -> Charge:
    gateway.processing_delay = 60.0  # stays pending for the whole test
    token = gateway.create_transaction_token("card")["id"]
    return services.create_charge(transaction_token_id=token, amount=100, currency="JPY")


@pytest.mark.parametrize("timeout", [0.3, 0.8])
def test_wait_returns_within_its_timeout_though_the_gateway_holds_longer(
    fake_gateway_server, timeout
):
    fake_gateway_server.polling_timeout = 60.0  # the gateway would hold each read this long
    charge = _pending_charge(fake_gateway_server)
    started = time.monotonic()
    current = services.wait_for_charge(charge, timeout=timeout)
    elapsed = time.monotonic() - started
    assert current.status == "pending"
    # Waiting out the gateway's hold would take 60 s: the margin is two orders of magnitude.
    assert elapsed < 30, elapsed


def test_wait_returns_the_outcome_when_it_comes_in_time(fake_gateway_server):
    fake_gateway_server.polling_timeout = 60.0
    fake_gateway_server.processing_delay = 0.4
    token = fake_gateway_server.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=100, currency="JPY")
    assert charge.status == "pending"
    started = time.monotonic()
    done = services.wait_for_charge(charge, timeout=120)
    assert done.status == "successful"
    # Held, then answered as soon as it moved on: a read that waited out the gateway's
    # hold would take 60 s, a wait that ran out 120 s.
    assert time.monotonic() - started < 30


def _charge_json(status: str) -> dict[str, Any]:
    return {"id": str(CHARGE), "store_id": TEST_STORE_ID, "status": status}


CHARGE = uuid.uuid4()


class _Enough(Exception):
    """Ends a wait from its sleep once the pauses to check were taken."""


def test_answers_that_do_not_hold_are_followed_by_growing_pauses(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": TEST_BASE_URL}
    url = f"{TEST_BASE_URL}/stores/{TEST_STORE_ID}/charges/{CHARGE}"
    pauses: list[float] = []

    def sleep(seconds: float) -> None:  # records the pause instead of taking it
        pauses.append(seconds)
        if len(pauses) == 5:
            raise _Enough

    with responses.RequestsMock() as rsps:
        rsps.get(url, json=_charge_json("pending"))
        charge = services.refresh_charge(CHARGE, TEST_STORE_ID)
        # The deadline is far away, so no pause is cut short by it, however busy the machine.
        with pytest.raises(_Enough):
            services.wait_for_charge(charge, timeout=600, sleep=sleep)
        reads = len(rsps.calls) - 1
    # 0.1, 0.2, 0.4 ... seconds, capped: a pause between every two reads, never a busy loop.
    assert pauses == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6], abs=1e-9)
    assert reads == len(pauses) + 1  # the plain read first, then a read after each pause


@pytest.mark.parametrize(
    "failure",
    [
        {"body": requests.ConnectionError("refused")},
        {"status": 503, "json": {"code": "SERVICE_UNAVAILABLE"}},
        {"status": 429, "json": {}},
    ],
    ids=["network", "503", "429"],
)
def test_failed_reads_are_waited_out_not_raised(settings, failure):
    """The charge exists whatever a read says: a caller told of an error could tell its
    customer that nothing was charged (the example shop did)."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": TEST_BASE_URL, "MAX_RETRIES": 0}
    url = f"{TEST_BASE_URL}/stores/{TEST_STORE_ID}/charges/{CHARGE}"
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)

    with responses.RequestsMock() as rsps:
        rsps.get(url, json=_charge_json("pending"))
        charge = services.refresh_charge(CHARGE, TEST_STORE_ID)
        rsps.replace("GET", url, **failure)
        current = services.wait_for_charge(charge, timeout=1.0, sleep=sleep)
        failed_reads = len(rsps.calls) - 1
        rsps.replace("GET", url, json=_charge_json("successful"))
        done = services.wait_for_charge(charge, timeout=1.0)
    assert current.status == "pending" and current.gateway_id == charge.gateway_id
    assert sum(pauses) <= 1.0  # no pause reaches past the time-out
    assert failed_reads <= 8, failed_reads  # paused between, not a busy loop
    # Growing from 0.1 s (the deadline may only cut the last one short).
    assert pauses and pauses[0] <= 0.1
    assert all(later <= 2 * earlier + 1e-9 for earlier, later in itertools.pairwise(pauses))
    assert done.status == "successful"
