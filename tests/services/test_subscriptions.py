"""Subscription services against the fake: exactly once, refused locally, mirrored."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services, signals
from django_paycharge.exceptions import (
    APIError,
    IdempotencyKeyReusedError,
    InvalidParametersError,
    PayChargeError,
    SubscriptionStateError,
)
from django_paycharge.models import Subscription, SubscriptionRequest
from django_paycharge.services.clients import get_client
from django_paycharge.services.lifecycle import send
from django_paycharge.services.subscriptions.kinds import CREATE_SUBSCRIPTION, SUSPEND
from tests.waiting import GUARD

pytestmark = pytest.mark.django_db

PLAN: dict[str, Any] = {"amount": 1000, "currency": "JPY", "period": "monthly"}


def token(gateway: Any) -> str:
    return str(gateway.create_transaction_token(type="subscription")["id"])


def sent(gateway: Any, method: str, tail: str) -> list[dict[str, Any]]:
    return [r for r in gateway.requests_log if r["method"] == method and r["path"].endswith(tail)]


def test_a_lost_answer_makes_one_subscription(fake_gateway) -> None:
    fake_gateway.add_fault("POST", r"^/subscriptions$", action="drop_after", count=1)
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    posts = sent(fake_gateway, "POST", "/subscriptions")
    assert len(posts) == 2  # the answer was lost, the same key asked again
    assert len({p["headers"]["idempotency-key"] for p in posts}) == 1
    assert len(fake_gateway.state.subscriptions) == 1
    assert Subscription.objects.get().gateway_id == made.gateway_id
    request = SubscriptionRequest.objects.get()
    assert (request.kind, request.state, request.subscription_id) == (
        "subscription_create",
        "succeeded",
        made.pk,
    )


@pytest.mark.parametrize("payment_type", ["bank_transfer", "online", "paidy"])
def test_a_payment_type_that_cannot_subscribe_is_refused_before_any_request(
    fake_gateway, payment_type: str
) -> None:
    before = len(fake_gateway.requests_log)
    with pytest.raises(InvalidParametersError) as refused:
        services.create_subscription(
            transaction_token_id=str(uuid.uuid4()), payment_type=payment_type, **PLAN
        )
    assert [e.field for e in refused.value.errors] == ["payment_type"]
    assert len(fake_gateway.requests_log) == before
    assert not SubscriptionRequest.objects.exists()


def test_the_first_payment_is_heard_with_its_subscription_current(
    fake_gateway, django_capture_on_commit_callbacks
) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    heard: list[str | None] = []

    def receiver(sender: Any, charge: Any, **kwargs: Any) -> None:
        heard.append(Subscription.objects.get(gateway_id=charge.subscription_id).status)

    signals.subscription_renewal_paid.connect(receiver, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            first = services.subscription_first_charge(made, timeout=GUARD)
    finally:
        signals.subscription_renewal_paid.disconnect(receiver)
    assert first is not None and first.status == "successful"
    # The shop marks the order paid on this signal: its page must not show "unverified".
    assert heard == ["current"]


def test_a_konbini_subscriptions_first_charge_waits_at_the_store(fake_gateway) -> None:
    konbini = fake_gateway.create_transaction_token("konbini", type="subscription")["id"]
    made = services.create_subscription(
        transaction_token_id=konbini, payment_type="konbini", **PLAN
    )
    first = services.subscription_first_charge(made, timeout=GUARD)
    assert first is not None and first.status == "awaiting"
    assert services.known_payment_type(first) == "konbini"
    assert services.payment_instructions(first).convenience_store == "seven_eleven"
    fake_gateway.complete(str(first.gateway_id))
    returned = services.refresh_returned_charge(first.gateway_id)
    made.refresh_from_db()
    assert returned.status == "successful" and made.status == "current"


def test_a_crash_before_sending_is_recovered_once(fake_gateway) -> None:
    body = {"transaction_token_id": token(fake_gateway), **PLAN}
    SubscriptionRequest.objects.create(  # committed, then the process died
        kind=CREATE_SUBSCRIPTION.name,
        idempotency_key=str(uuid.uuid4()),
        params=body,
        state="unknown",
        attempts=1,
    )
    first = services.recover_requests(older_than=timedelta(0))
    again = services.recover_requests(older_than=timedelta(0))
    assert first.by_kind["subscription_create"]["settled"] == 1
    assert again.settled == 0
    assert len(fake_gateway.state.subscriptions) == 1 == Subscription.objects.count()


def test_the_same_key_gives_the_same_subscription(fake_gateway) -> None:
    card = token(fake_gateway)
    one = services.create_subscription(transaction_token_id=card, idempotency_key="o-1", **PLAN)
    two = services.create_subscription(transaction_token_id=card, idempotency_key="o-1", **PLAN)
    assert one.pk == two.pk and len(sent(fake_gateway, "POST", "/subscriptions")) == 1
    with pytest.raises(IdempotencyKeyReusedError):
        services.create_subscription(
            transaction_token_id=card, idempotency_key="o-1", **{**PLAN, "amount": 2000}
        )
    with pytest.raises(InvalidParametersError):  # refused before anything is kept
        services.create_subscription(transaction_token_id=card, amount=1000, currency="JPY")
    assert SubscriptionRequest.objects.count() == 1


def test_changes_and_their_local_refusals(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    with pytest.raises(SubscriptionStateError) as early:
        services.resume_subscription(made)  # current: nothing to resume
    assert (early.value.code, early.value.status) == ("FORBIDDEN_PARAMETER", "current")
    assert sent(fake_gateway, "PATCH", "/unsuspend") == []  # refused before any request
    assert services.suspend_subscription(made, requested_by="staff").status == "suspended"
    assert services.resume_subscription(made).status == "unpaid"
    new_card = token(fake_gateway)
    changed = services.change_subscription_card(made, transaction_token_id=new_card)
    assert str(changed.transaction_token_id) == new_card
    assert services.cancel_subscription(made).status == "canceled"
    for change in (services.suspend_subscription, services.cancel_subscription):
        with pytest.raises(SubscriptionStateError):
            change(made)
    kinds = list(SubscriptionRequest.objects.order_by("pk").values_list("kind", "state"))
    assert kinds == [
        ("subscription_create", "succeeded"),
        ("subscription_suspend", "succeeded"),
        ("subscription_resume", "succeeded"),
        ("subscription_card", "succeeded"),
        ("subscription_cancel", "succeeded"),
    ]


def test_a_lost_cancel_answer_is_settled_by_reading(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    fake_gateway.add_fault("DELETE", r"/subscriptions/", action="drop_after", count=1)
    # The second DELETE is refused (already ended): read, it is our own cancel.
    assert services.cancel_subscription(made).status == "canceled"
    assert len(sent(fake_gateway, "DELETE", str(made.gateway_id))) == 2
    assert SubscriptionRequest.objects.get(kind="subscription_cancel").state == "succeeded"


def test_scheduled_payments_and_simulation(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    fake_gateway.move_clock(timedelta(days=32))
    payments = services.scheduled_payments(made)
    assert [p.is_paid for p in payments] == [True, True, False]
    assert made.charges().count() == 0  # charges are mirrored by their own reads
    plan = services.simulate_plan(payment_type="card", **PLAN)
    assert len(plan) == 12 and plan[0].amount == 1000


def test_two_staff_suspending_at_once_make_one_change(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    # Staff B read "current" and committed a request; staff A's suspend went through first.
    late = SubscriptionRequest.objects.create(
        kind=SUSPEND.name,
        idempotency_key="staff-b",
        params={},
        subscription=made,
        state="unknown",
        attempts=1,
    )
    assert services.suspend_subscription(made, idempotency_key="staff-a").status == "suspended"
    # B's send is refused (already suspended): a read shows the change it asked for.
    assert send(SUSPEND, late, recorded=True).status == "suspended"
    assert SubscriptionRequest.objects.get(pk=late.pk).state == "succeeded"
    assert len(sent(fake_gateway, "PATCH", "/suspend")) == 2


def test_a_lost_suspend_answer_is_asked_again_with_its_key(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    fake_gateway.add_fault("PATCH", r"/suspend$", action="drop_after", count=1)
    assert services.suspend_subscription(made).status == "suspended"
    patches = sent(fake_gateway, "PATCH", "/suspend")
    assert len(patches) == 2 and len({p["headers"]["idempotency-key"] for p in patches}) == 1


def test_a_refusal_of_the_gateway_is_final(fake_gateway) -> None:
    one_time = str(fake_gateway.create_transaction_token()["id"])
    with pytest.raises(APIError) as refused:
        services.create_subscription(transaction_token_id=one_time, **PLAN)
    assert (refused.value.code, refused.value.outcome) == ("NOT_SUBSCRIPTION_TOKEN", "refused")
    request = SubscriptionRequest.objects.get()
    assert request.state == "failed" and request.subscription is None
    assert services.recover_requests(older_than=timedelta(0)).settled == 0


def test_an_update_changes_the_amount_and_refuses_a_period_once_started(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    changed = services.update_subscription(made, amount=1500, metadata={"size": "large"})
    assert (changed.amount, changed.metadata) == (1500, {"size": "large"})
    before = len(fake_gateway.requests_log)
    refused: list[tuple[dict[str, Any], str]] = [
        ({"period": "weekly"}, "CANNOT_SET_AFTER_SUBSCRIPTION_STARTED"),
        (
            {"subscription_plan": {"plan_type": "fixed_cycles", "fixed_cycles": 3}},
            "PLAN_ALREADY_SET",
        ),
    ]
    for change, code in refused:
        with pytest.raises(SubscriptionStateError) as error:
            services.update_subscription(changed, **change)
        assert error.value.code == code
    sent_after = [r["method"] for r in fake_gateway.requests_log[before:]]
    assert "PATCH" not in sent_after  # refused before anything was sent
    with pytest.raises(InvalidParametersError):
        services.update_subscription(changed)  # nothing to change
    assert SubscriptionRequest.objects.filter(kind="subscription_update").count() == 1


def test_a_lost_update_answer_is_asked_again_with_its_key(fake_gateway) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    fake_gateway.add_fault("PATCH", r"/subscriptions/[^/]+$", action="drop_after", count=1)
    assert services.update_subscription(made, amount=2000).amount == 2000
    patches = sent(fake_gateway, "PATCH", str(made.gateway_id))
    assert len(patches) == 2 and len({p["headers"]["idempotency-key"] for p in patches}) == 1
    request = SubscriptionRequest.objects.get(kind="subscription_update")
    assert request.state == "succeeded" and request.subscription == made


def test_an_abandoned_update_is_never_sent_again_and_found_once_the_gateway_shows_it(
    fake_gateway,
) -> None:
    made = services.create_subscription(transaction_token_id=token(fake_gateway), **PLAN)
    path = r"/subscriptions/[^/]+$"
    fake_gateway.add_fault("PATCH", path, action="status", status=503, count=99)
    with pytest.raises(PayChargeError):
        services.update_subscription(made, amount=2000, metadata={"size": "large"})
    request = SubscriptionRequest.objects.get(kind="subscription_update")
    assert request.state == "abandoned"
    fake_gateway.clear_faults()
    patches = len(sent(fake_gateway, "PATCH", str(made.gateway_id)))
    services.recover_requests(older_than=timedelta(0))
    request.refresh_from_db()
    assert request.state == "abandoned"  # the gateway shows nothing of it: left as it is
    # The gateway did it after all (late): the next check finds it, and sends nothing.
    client = get_client("default")
    store = str(made.store_id)
    client.subscriptions.update(store, made.gateway_id, amount=2000, metadata={"size": "large"})
    settled = services.recover_requests(older_than=timedelta(0))
    request.refresh_from_db()
    assert settled.by_kind["subscription_update"]["found"] == 1
    assert request.state == "succeeded" and Subscription.objects.get().amount == 2000
    assert len(sent(fake_gateway, "PATCH", str(made.gateway_id))) == patches + 1  # ours only
