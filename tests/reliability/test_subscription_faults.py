"""Subscriptions under faults: a lost creation answer, a lost renewal webhook, two staff at once.

The fake gateway over real HTTP. Each test counts what a shop would lose money or
trust over: a second subscription for one request, a renewal the shop never hears
of or hears twice, a suspension sent twice or a caller told "refused" for a
change the gateway made for it.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from django_paycharge import services
from django_paycharge.exceptions import PayChargeError, SubscriptionStateError
from django_paycharge.models import Subscription, SubscriptionRequest
from django_paycharge.signals import subscription_renewal_paid
from tests.waiting import join

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PLAN: dict[str, Any] = {"amount": 1000, "currency": "JPY", "period": "monthly"}
ROUNDS = 4


def _token(gateway: Any) -> str:
    return str(gateway.create_transaction_token(type="subscription")["id"])


def _made_at_gateway(gateway: Any, token: str) -> int:
    listed = gateway.state.subscriptions.values()
    return sum(1 for sub in listed if sub.token.id == token)


def test_a_lost_answer_to_a_creation_makes_one_subscription(
    fake_gateway_server: Any, reliability_record: Any
) -> None:
    damage = Counter(dict.fromkeys(("duplicates", "not_mirrored", "errors"), 0))
    cases = 0
    for key_given in (True, False):
        for n in range(ROUNDS):
            token = _token(fake_gateway_server)
            # The gateway makes it, and the answer is lost, twice in a row.
            fake_gateway_server.add_fault("POST", r"^/subscriptions$", action="drop_after", count=2)
            key = f"order-{n}-{key_given}" if key_given else None
            try:
                made = services.create_subscription(
                    transaction_token_id=token, idempotency_key=key, **PLAN
                )
            except PayChargeError:
                damage["errors"] += 1
                made = None
            fake_gateway_server.clear_faults()
            damage["duplicates"] += _made_at_gateway(fake_gateway_server, token) > 1
            damage["not_mirrored"] += (
                made is None or not Subscription.objects.filter(pk=made.pk).exists()
            )
            cases += 1
    settled = services.recover_requests(older_than=timedelta(0))
    damage["duplicates"] += Subscription.objects.count() != cases
    reliability_record(
        "Subscription: lost answers to its creation",
        f"the gateway makes the subscription and its answer is lost twice in a row, {ROUNDS} "
        "times with the caller's key and as many without one; then paycharge_recover; real "
        "HTTP fake",
        cases,
        damage,
        note=f"recovery afterwards settled {settled.settled} (nothing left open)",
    )
    assert settled.settled == 0


def test_a_renewal_whose_webhook_was_lost_is_heard_once_from_the_sync(
    fake_gateway_server: Any, reliability_record: Any
) -> None:
    heard: Counter[Any] = Counter()

    def receiver(sender: Any, charge: Any, **kwargs: Any) -> None:
        heard[charge.gateway_id] += 1

    subscription_renewal_paid.connect(receiver, sender=Subscription, weak=False)
    try:
        made = [
            services.create_subscription(transaction_token_id=_token(fake_gateway_server), **PLAN)
            for _ in range(ROUNDS)
        ]
        services.sync_subscriptions()  # the first payments (no webhook reaches this shop)
        fake_gateway_server.move_clock(timedelta(days=32))  # renewals: their webhooks lost
        services.sync_subscriptions()
        services.sync_subscriptions()  # again: nothing new
    finally:
        subscription_renewal_paid.disconnect(receiver, sender=Subscription)
    paid = {
        charge.id
        for charge in fake_gateway_server.state.charges.values()
        if charge.subscription_id and charge.status == "successful"
    }
    damage = {
        "renewals_missed": len({p for p in paid if str(p) not in {str(h) for h in heard}}),
        "heard_twice": sum(1 for n in heard.values() if n > 1),
    }
    reliability_record(
        "Subscription: a renewal webhook lost",
        f"{ROUNDS} monthly subscriptions; the fake's clock moved 32 days, every renewal's "
        "webhook lost; paycharge_sync --subscriptions twice; real HTTP fake",
        len(paid),
        damage,
        note=f"{len(made)} subscriptions, {len(paid)} payments heard by the shop's receiver",
    )
    assert len(paid) == 2 * ROUNDS


def _suspend(subscription: Subscription, who: str) -> str:
    try:
        services.suspend_subscription(subscription, requested_by=who)
    except SubscriptionStateError:
        return "refused"
    except PayChargeError as exc:
        return exc.outcome or "refused"
    except Exception:
        return "error"
    finally:
        connection.close()
    return "done"


def _race(subscription: Subscription) -> list[str]:
    """Two staff suspend ``subscription`` at the same moment, each on a thread of its own."""
    barrier = threading.Barrier(2)
    outcomes = ["", ""]

    def run(i: int) -> None:
        barrier.wait()
        outcomes[i] = _suspend(subscription, f"staff-{i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        join(thread, "a suspend of one of the two staff")
    return outcomes


def test_two_staff_suspending_at_once_make_one_change(
    fake_gateway_server: Any, reliability_record: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_gateway_server.add_fault("PATCH", r"/suspend$", action="latency", latency=0.2)
    state = fake_gateway_server.state
    made_by_gateway: Counter[str] = Counter()  # the suspensions the gateway carried out
    change = state.change_subscription

    def counted(sub: Any, action: str, body: Any) -> Any:
        answer = change(sub, action, body)  # a refused change raises: not counted
        made_by_gateway[sub.id] += action == "suspend"
        return answer

    monkeypatch.setattr(state, "change_subscription", counted)
    damage = Counter(dict.fromkeys(("suspended_twice", "not_suspended", "errors"), 0))
    told: Counter[str] = Counter()
    for _ in range(ROUNDS):
        made = services.create_subscription(
            transaction_token_id=_token(fake_gateway_server), **PLAN
        )
        outcomes = _race(made)
        remote = state.subscriptions[str(made.gateway_id)]
        damage["suspended_twice"] += made_by_gateway[remote.id] > 1
        damage["not_suspended"] += remote.status != "suspended"
        damage["errors"] += outcomes.count("error") + outcomes.count("unknown")
        told.update(outcomes)
    requests = SubscriptionRequest.objects.filter(kind="subscription_suspend")
    reliability_record(
        "Subscription: two staff suspending at once",
        f"two threads suspend one subscription at the same moment with keys of their own, "
        f"{ROUNDS} rounds; the gateway's PATCH takes 0.2 s; real HTTP fake",
        ROUNDS,
        damage,
        note=(
            f"callers told: done {told['done']}, refused {told['refused']}; "
            f"{requests.filter(state='succeeded').count()} requests succeeded"
        ),
    )
