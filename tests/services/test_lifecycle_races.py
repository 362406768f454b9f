"""Races around refunds, with real threads, real HTTP and committed transactions.

Runs on SQLite (one writer at a time) and on PostgreSQL (row locks); the
suite's PostgreSQL pass covers the second.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from django_paycharge import services, signals
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import ChargeActionRequest, Refund, WebhookDelivery
from tests.waiting import join, wait_deliveries, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "whk-lifecycle-race-token-7c1d"


def run_together(*calls: Callable[[], Any]) -> list[Any]:
    """Start every call at the same moment on its own thread; results or exceptions, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[i] = call()
        except Exception as exc:  # the caller asserts on it
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        join(thread, "one of the calls run together")
    return results


@pytest.fixture
def paid(fake_gateway_server):
    token = fake_gateway_server.create_transaction_token("card")["id"]
    return services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")


def test_a_double_click_with_the_form_key_refunds_once(fake_gateway_server, paid):
    key = str(uuid.uuid4())
    first, second = run_together(
        lambda: services.refund_charge(paid, idempotency_key=key),
        lambda: services.refund_charge(paid, idempotency_key=key),
    )
    assert isinstance(first, Refund) and isinstance(second, Refund), (first, second)
    assert first.pk == second.pk
    assert len(fake_gateway_server.state.refunds) == 1
    assert Refund.objects.count() == 1 and ChargeActionRequest.objects.count() == 1


def test_a_double_click_with_two_keys_cannot_refund_twice(fake_gateway_server, paid):
    results = run_together(
        lambda: services.refund_charge(paid), lambda: services.refund_charge(paid)
    )
    refunds = [r for r in results if isinstance(r, Refund)]
    refused = [r for r in results if isinstance(r, PayChargeError)]
    assert len(refunds) == 1 and len(refused) == 1, results
    assert len(fake_gateway_server.state.refunds) == 1
    assert Refund.objects.get().amount == 1000
    # The second click was refused here, under the charge's lock: the gateway saw one refund.
    posts = [r for r in fake_gateway_server.requests_log if r["path"].endswith("/refunds")]
    assert len([r for r in posts if r["method"] == "POST"]) == 1


def test_refunds_while_their_webhooks_arrive(fake_gateway_server, live_server, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway_server.add_webhook(
        f"{live_server.url}/payments/webhook/", triggers=["refund_finished"], auth_token=TOKEN
    )
    created: Counter[uuid.UUID] = Counter()
    paths: dict[uuid.UUID, list[tuple[str | None, str]]] = {}

    def on_created(refund: Refund, **kwargs: Any) -> None:
        created[refund.gateway_id] += 1

    def on_status(refund: Refund, previous_status: str | None, status: str, **kw: Any) -> None:
        paths.setdefault(refund.gateway_id, []).append((previous_status, status))

    signals.refund_created.connect(on_created, weak=False)
    signals.refund_status_changed.connect(on_status, weak=False)
    rounds = 8
    try:
        for n in range(rounds):
            fake_gateway_server.processing_delay = 0.0
            token = fake_gateway_server.create_transaction_token("card")["id"]
            charge = services.create_charge(transaction_token_id=token, amount=500, currency="JPY")
            # Alternate: finished before the answer, or a moment after it.
            fake_gateway_server.processing_delay = 0.0 if n % 2 else 0.01
            services.refund_charge(charge, amount=200)
        wait_deliveries(fake_gateway_server)
        wait_until(
            lambda: (
                WebhookDelivery.objects.filter(status="processed").count() == rounds
                and Refund.objects.filter(status="successful").count() == rounds
            ),
            f"{rounds} refund webhooks processed",
            diagnose=lambda: str(
                list(WebhookDelivery.objects.values("status", "attempts", "last_error"))
            ),
        )
    finally:
        signals.refund_created.disconnect(on_created)
        signals.refund_status_changed.disconnect(on_status)
    assert Refund.objects.count() == rounds == len(fake_gateway_server.state.refunds)
    assert Refund.objects.filter(status="successful").count() == rounds
    assert WebhookDelivery.objects.filter(status="processed").count() == rounds
    assert set(created.values()) == {1} and len(created) == rounds
    for steps in paths.values():
        # One path forward, no step twice: None -> successful, or through pending. Heard in
        # the order the changes' announcements ran: two commits of one refund a moment
        # apart (the refund's request and its webhook, in two threads) may be heard in
        # either order, each once.
        assert sorted(steps, key=lambda step: step[0] is not None) in (
            [(None, "successful")],
            [(None, "pending"), ("pending", "successful")],
        )
