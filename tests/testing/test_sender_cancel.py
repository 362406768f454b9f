"""A reset drops deliveries still queued or retrying, so they never hold up later ones."""

from __future__ import annotations

from django_paycharge.testing.records import Delivery
from django_paycharge.testing.webhook_sender import WebhookSender
from tests.waiting import GUARD, wait_until


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

    # Retried without the cancel, these would take 5 deliveries x 3 pauses x 60 s.
    sender = WebhookSender(failing, background=True, max_attempts=4, retry_delays=(60.0,))
    stale = [make_delivery(f"http://gone.invalid/{i}") for i in range(5)]
    sender.send(stale)
    # One delivery is in its retry pause, the others queued behind it.
    wait_until(lambda: calls, "the first attempt", every=0.01)
    sender.cancel_pending()
    assert sender.wait_idle(GUARD)  # ends when the sender is idle: a guard
    assert len(calls) <= 2
    assert {d.state for d in stale} == {"canceled"}
