"""The shop hears each renewal: the subscription signals, driven by the fake's clock.

Said by the mirror's one writer when what it holds changes, whichever path saw it
first (a service's answer, a webhook, a sync); a repeated or stale read says nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services, signals
from django_paycharge.client import parse_subscription
from django_paycharge.exceptions import PayChargeError, SyncInProgressError
from django_paycharge.models import Subscription
from django_paycharge.services.mirror import store_subscription
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery
from django_paycharge.testing import CARD_DECLINED
from tests.services.listening import listening

pytestmark = pytest.mark.django_db

NAMES = [name for name in signals.SIGNALS if name.startswith("subscription_")]
PLAN: dict[str, Any] = {"amount": 1000, "currency": "JPY", "period": "monthly"}


@pytest.fixture
def heard() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """What the subscription signals said, in order: (name, arguments but the signal)."""
    with listening(NAMES, Subscription) as said:
        yield said


def subscribe(gateway: Any, card: str | None = None, **fields: Any) -> Subscription:
    extra = {"card_number": card} if card else {}
    token = gateway.create_transaction_token(type="subscription", **extra)["id"]
    return services.create_subscription(transaction_token_id=token, **{**PLAN, **fields})


def webhook(event: str, subscription: Subscription, capture: Any) -> None:
    """The gateway's ``event`` naming ``subscription``, stored and processed; receivers run."""
    body = {"id": str(uuid.uuid4()), "event": event, "data": {"id": str(subscription.gateway_id)}}
    with capture(execute=True):
        delivery, _ = store_delivery(body=json.dumps(body).encode(), headers={}, account="default")
        assert process_delivery(delivery.pk) == "processed"


def renewals(heard: list[tuple[str, dict[str, Any]]], name: str) -> list[tuple[Any, Any, str]]:
    return [
        (kw["subscription"].gateway_id, kw["charge"].gateway_id, kw["charge"].status)
        for said, kw in heard
        if said == name
    ]


def statuses(heard: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any, Any]]:
    return [
        (name, kw.get("previous_status"), kw.get("status"))
        for name, kw in heard
        if name not in ("subscription_renewal_paid", "subscription_renewal_failed")
    ]


def test_each_renewal_paid_is_heard_once_with_its_charge(
    fake_gateway, heard, django_capture_on_commit_callbacks
) -> None:
    sub = subscribe(fake_gateway)
    webhook("subscription_payment", sub, django_capture_on_commit_callbacks)
    [first] = renewals(heard, "subscription_renewal_paid")  # the first payment is one too
    fake_gateway.move_clock(timedelta(days=32))
    webhook("subscription_payment", sub, django_capture_on_commit_callbacks)
    paid = renewals(heard, "subscription_renewal_paid")
    charges = {c.gateway_id for c in Subscription.objects.get().charges()}
    assert [p[0] for p in paid] == [sub.gateway_id] * 2 and {p[1] for p in paid} == charges
    assert paid[0] == first and paid[1][2] == "successful"
    [(_, kwargs)] = [h for h in heard if h[1].get("charge") is not None][1:]
    assert isinstance(kwargs["event_id"], uuid.UUID)
    # The same event again, and a late one: the mirror holds it already, nothing is said.
    before = len(heard)
    webhook("subscription_payment", sub, django_capture_on_commit_callbacks)
    webhook("subscription_created", sub, django_capture_on_commit_callbacks)
    assert len(heard) == before


def test_a_failed_renewal_and_the_unpaid_subscription(
    fake_gateway, heard, django_capture_on_commit_callbacks
) -> None:
    sub = subscribe(fake_gateway, card=CARD_DECLINED, retry_interval="P2D")
    webhook("subscription_failure", sub, django_capture_on_commit_callbacks)
    [(sub_id, _charge, status)] = renewals(heard, "subscription_renewal_failed")
    assert (sub_id, status) == (sub.gateway_id, "failed")
    assert ("subscription_status_changed", "unverified", "unpaid") in statuses(heard)
    assert renewals(heard, "subscription_renewal_paid") == []


def test_suspended_canceled_each_once_whichever_path_saw_it(
    fake_gateway, heard, django_capture_on_commit_callbacks
) -> None:
    sub = subscribe(fake_gateway)
    with django_capture_on_commit_callbacks(execute=True):
        services.suspend_subscription(sub)
    webhook("subscription_suspended", sub, django_capture_on_commit_callbacks)  # known already
    with django_capture_on_commit_callbacks(execute=True):
        services.cancel_subscription(sub)
    webhook("subscription_canceled", sub, django_capture_on_commit_callbacks)
    said = [s for s in statuses(heard) if s[0] != "subscription_status_changed"]
    assert said == [
        ("subscription_suspended", "current", None),
        ("subscription_canceled", "suspended", None),
    ]
    changed = [s[1:] for s in statuses(heard) if s[0] == "subscription_status_changed"]
    assert changed[-2:] == [("current", "suspended"), ("suspended", "canceled")]


def test_the_last_payment_of_a_fixed_plan_completes_it(
    fake_gateway, heard, django_capture_on_commit_callbacks
) -> None:
    plan = {"plan_type": "fixed_cycles", "fixed_cycles": 2}
    sub = subscribe(fake_gateway, subscription_plan=plan)
    webhook("subscription_payment", sub, django_capture_on_commit_callbacks)
    fake_gateway.move_clock(timedelta(days=32))
    webhook("subscription_completed", sub, django_capture_on_commit_callbacks)
    webhook("subscription_payment", sub, django_capture_on_commit_callbacks)
    assert ("subscription_completed", "current", None) in statuses(heard)
    assert [s[0] for s in statuses(heard)].count("subscription_completed") == 1
    assert len(renewals(heard, "subscription_renewal_paid")) == 2


def test_a_renewal_whose_webhook_was_lost_is_heard_from_the_sync_once(
    fake_gateway, heard, django_capture_on_commit_callbacks
) -> None:
    sub = subscribe(fake_gateway)
    webhook("subscription_payment", sub, django_capture_on_commit_callbacks)
    fake_gateway.move_clock(timedelta(days=32))  # the renewal's webhook is never processed
    with django_capture_on_commit_callbacks(execute=True):
        result = services.sync_subscriptions()
    assert (result.seen, result.changed) == (1, 1)
    paid = renewals(heard, "subscription_renewal_paid")
    assert len(paid) == 2 and len({p[1] for p in paid}) == 2
    before = len(heard)
    with django_capture_on_commit_callbacks(execute=True):
        again = services.sync_subscriptions()
    assert (again.seen, again.changed, again.charges) == (1, 0, 0)
    assert len(heard) == before


def test_a_stale_read_says_nothing_a_new_row_says_its_first_status(
    heard, django_capture_on_commit_callbacks
) -> None:
    def store(status: str, updated_on: str) -> None:
        body = {"id": "11efe2d1-b782-1358-b3e0-d7b500e13963", "status": status}
        with django_capture_on_commit_callbacks(execute=True):
            store_subscription(
                parse_subscription({**body, "updated_on": updated_on}), account="default"
            )

    store("current", "2025-01-01T00:00:00Z")
    store("suspended", "2025-01-02T00:00:00Z")
    store("current", "2025-01-01T12:00:00Z")  # a late event of the day before: stale
    store("suspended", "2025-01-02T00:00:00Z")  # the same again
    assert statuses(heard) == [
        ("subscription_status_changed", None, "current"),
        ("subscription_status_changed", "current", "suspended"),
        ("subscription_suspended", "current", None),
    ]


def test_a_sync_cut_short_before_the_charges_reads_them_next_time(
    fake_gateway, heard, django_capture_on_commit_callbacks
) -> None:
    sub = subscribe(fake_gateway)
    fake_gateway.move_clock(timedelta(days=32))  # two payments, no webhook heard
    path = r"/subscriptions/[^/]+/charges"
    fake_gateway.add_fault("GET", path, action="status", status=400, count=1)
    with pytest.raises(PayChargeError), django_capture_on_commit_callbacks(execute=True):
        services.sync_subscriptions()
    assert Subscription.objects.get().updated_on == sub.updated_on  # not moved on
    with django_capture_on_commit_callbacks(execute=True):
        assert services.sync_subscriptions().charges == 2
    assert len(renewals(heard, "subscription_renewal_paid")) == 2


def test_a_subscription_sync_is_refused_while_another_runs(fake_gateway) -> None:
    from django_paycharge.services.sync.lock import account_lock

    with account_lock("default.subscriptions") as held:
        assert held
        with pytest.raises(SyncInProgressError, match="Another sync of account default is"):
            services.sync_subscriptions()
