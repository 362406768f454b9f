"""A reset drops deliveries still queued or retrying, so they never hold up later ones."""

from __future__ import annotations

import time

from django_paycharge.testing.records import Delivery
from django_paycharge.testing.webhook_sender import WebhookSender


def make_delivery(url: str) -> Delivery:
    return Delivery(
        id="d",
        webhook_id="w",
        event="charge_updated",
        url=url,
        headers={},
        body=b"{}",
        created_on="2026-11-22T00:00:00Z",
    )


def test_cancel_pending_drops_queued_and_retrying_deliveries():
    calls = []

    def failing(url, headers, body):
        calls.append(url)
        raise OSError("unreachable")

    sender = WebhookSender(failing, background=True, max_attempts=4, retry_delays=(0.2,))
    stale = [make_delivery(f"http://gone.invalid/{i}") for i in range(5)]
    sender.send(stale)
    time.sleep(0.05)
    started = time.monotonic()
    sender.cancel_pending()
    assert sender.wait_idle(2.0)
    assert time.monotonic() - started < 1.0  # not 5 deliveries x 4 attempts x 0.2 s
    assert len(calls) <= 2
    assert {d.state for d in stale} == {"canceled"}
