"""The fake's subscriptions, driven through the app's own client: create, renew, guard, cancel."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import responses

from django_paycharge.client import PayChargeClient, Subscription
from django_paycharge.client.subscription_vocabulary import SUBSCRIPTION_EVENTS
from django_paycharge.exceptions import APIError
from django_paycharge.testing import (
    CARD_DECLINED,
    CARD_THREE_DS,
    TEST_JWT,
    TEST_SECRET,
    TEST_STORE_ID,
    FakeGateway,
)
from django_paycharge.testing.responses_frontend import ResponsesFrontend
from django_paycharge.testing.subscription_records import add_months, due_date

STORE = TEST_STORE_ID


@pytest.fixture
def fake() -> Iterator[FakeGateway]:
    gateway = FakeGateway()
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        ResponsesFrontend(gateway.app).install(mock)
        yield gateway


@pytest.fixture
def client(fake: FakeGateway) -> Iterator[PayChargeClient]:
    with PayChargeClient(base_url=fake.base_url, secret=TEST_SECRET, jwt=TEST_JWT) as c:
        yield c


def events(fake: FakeGateway) -> list[str]:
    return [d.event for d in fake.state.deliveries]


def subscribe(
    fake: FakeGateway, client: PayChargeClient, card: str | None = None, **fields: Any
) -> Subscription:
    if card:
        token = fake.create_transaction_token(type="subscription", card_number=card)["id"]
    else:
        token = fake.create_transaction_token(type="subscription")["id"]
    params = {"transaction_token_id": token, "amount": 1000, "currency": "JPY", "period": "monthly"}
    created = client.subscriptions.create(**{**params, **fields})
    assert created.status == "unverified"
    return client.subscriptions.retrieve(STORE, created.id)


@pytest.fixture(autouse=True)
def listen(fake: FakeGateway) -> None:
    store = fake.state.stores[STORE]
    hook = {"url": "https://shop.example/hook", "triggers": list(SUBSCRIPTION_EVENTS)}
    fake.state.create_webhook(store, hook)


def test_first_payment_charges_and_renewals_follow_the_clock(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    sub = subscribe(
        fake, client, subscription_plan={"plan_type": "fixed_cycles", "fixed_cycles": 3}
    )
    assert (sub.status, sub.cycles_left) == ("current", 2)
    charges = list(client.subscriptions.charges(STORE, sub.id))
    assert [(c.status, c.subscription_id) for c in charges] == [("successful", sub.id)]
    assert fake.move_clock(dt.timedelta(days=1)) == 0  # not due yet
    assert fake.move_clock(dt.timedelta(days=62)) == 2  # two months: the last two payments
    done = client.subscriptions.retrieve(STORE, sub.id)
    assert (done.status, done.cycles_left, done.next_payment) == ("completed", 0, None)
    payments = list(client.subscriptions.payments(STORE, sub.id))
    assert len(payments) == 3 and all(p.is_paid for p in payments)
    assert sum(p.is_last_payment is True for p in payments) == 1
    assert events(fake) == [
        "subscription_created",
        *["subscription_payment"] * 3,
        "subscription_completed",
    ]


def test_declined_renewal_is_retried_by_the_schedule(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    sub = subscribe(fake, client, card=CARD_DECLINED, retry_interval="P2D")
    assert sub.status == "unpaid"
    assert sub.next_payment is not None and sub.next_payment.retry_date is not None
    assert fake.move_clock(dt.timedelta(days=2)) == 1
    assert events(fake) == ["subscription_created", "subscription_failure", "subscription_failure"]
    charges = list(client.subscriptions.charges(STORE, sub.id))
    assert [c.status for c in charges] == ["failed", "failed"]


def test_transitions_and_their_guards(fake: FakeGateway, client: PayChargeClient) -> None:
    sub = subscribe(fake, client)
    with pytest.raises(APIError) as refused:
        client.subscriptions.unsuspend(STORE, sub.id)  # current: not suspended
    assert refused.value.http_status == 400
    assert [(e.field, e.reason) for e in refused.value.errors] == [
        ("status", "FORBIDDEN_PARAMETER")
    ]
    assert client.subscriptions.suspend(STORE, sub.id).status == "suspended"
    assert fake.move_clock(dt.timedelta(days=40)) == 0  # a suspended subscription is not charged
    assert client.subscriptions.unsuspend(STORE, sub.id).status == "unpaid"
    new_card = fake.create_transaction_token(type="subscription")["id"]
    changed = client.subscriptions.change_token(STORE, sub.id, transaction_token_id=new_card)
    assert changed.transaction_token_id == uuid.UUID(new_card)
    client.subscriptions.cancel(STORE, sub.id)
    assert client.subscriptions.retrieve(STORE, sub.id).status == "canceled"
    for call, code in [
        (lambda: client.subscriptions.cancel(STORE, sub.id), "SUBSCRIPTION_ALREADY_ENDED"),
        (
            lambda: client.subscriptions.suspend(STORE, sub.id),
            "CANNOT_CHANGE_CANCELED_SUBSCRIPTION",
        ),
        (
            lambda: client.subscriptions.change_token(STORE, sub.id, transaction_token_id=new_card),
            "CANNOT_CHANGE_CANCELED_SUBSCRIPTION",
        ),
    ]:
        with pytest.raises(APIError) as ended:
            call()
        assert ended.value.code == code
    assert "subscription_suspended" in events(fake) and events(fake)[-1] == "subscription_canceled"


def test_an_update_changes_what_the_status_allows_and_refuses_the_rest(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    sub = subscribe(fake, client)  # current: its first payment made
    moved = client.subscriptions.update(STORE, sub.id, amount=1500, metadata={"plan": "large"})
    assert (moved.amount, moved.metadata) == (1500, {"plan": "large"})
    assert moved.next_payment is not None and moved.next_payment.amount == 1500
    refused_changes: list[tuple[dict[str, Any], str]] = [
        ({"period": "weekly"}, "CANNOT_SET_AFTER_SUBSCRIPTION_STARTED"),
        ({"installment_plan": {"plan_type": "revolving"}}, "PLAN_ALREADY_SET"),
        ({"status": "unpaid"}, "VALIDATION_ERROR"),  # resume: not suspended
        ({"amount": 900, "period": "weekly"}, "CANNOT_SET_AFTER_SUBSCRIPTION_STARTED"),
    ]
    for change, code in refused_changes:
        with pytest.raises(APIError) as refused:
            client.subscriptions.update(STORE, sub.id, **change)
        assert refused.value.code == code
    assert client.subscriptions.retrieve(STORE, sub.id).amount == 1500  # nothing half-done
    assert client.subscriptions.update(STORE, sub.id, status="suspended").status == "suspended"
    assert events(fake)[-1] == "subscription_suspended"
    new_card = fake.create_transaction_token(type="subscription")["id"]
    changed = client.subscriptions.update(STORE, sub.id, transaction_token_id=new_card)
    assert changed.transaction_token_id == uuid.UUID(new_card)


def test_an_unstarted_subscription_takes_a_new_period_and_plan(
    fake: FakeGateway, client: PayChargeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fake.state, "later", lambda work, item_id: None)  # not verified yet
    token = fake.create_transaction_token(type="subscription")["id"]
    created = client.subscriptions.create(
        transaction_token_id=token, amount=1000, currency="JPY", period="monthly"
    )
    plan = {"plan_type": "fixed_cycles", "fixed_cycles": 6}
    changed = client.subscriptions.update(
        STORE, created.id, period="weekly", subscription_plan=plan
    )
    assert changed.period == "weekly" and changed.cycles_left == 6


def test_suspend_on_next_payment_waits_for_the_due_day(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    sub = subscribe(fake, client)
    client.subscriptions.suspend(STORE, sub.id, termination_mode="on_next_payment")
    assert client.subscriptions.retrieve(STORE, sub.id).status == "current"
    fake.move_clock(dt.timedelta(days=32))
    assert client.subscriptions.retrieve(STORE, sub.id).status == "suspended"
    assert len(list(client.subscriptions.charges(STORE, sub.id))) == 1  # not charged
    assert events(fake)[-1] == "subscription_suspended"


def test_a_first_payment_asking_for_3ds_waits_for_the_customer(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    back = "https://shop.example/payments/return/3ds/"
    three_ds = {"mode": "normal", "redirect_endpoint": back}
    sub = subscribe(
        fake,
        client,
        card=CARD_THREE_DS,
        three_ds_mode="normal",
        three_ds_redirect_endpoint=back,
        metadata={"o": 7},
    )
    assert sub.status == "unverified" and sub.raw["three_ds"] == three_ds
    [charge] = client.subscriptions.charges(STORE, sub.id)
    assert charge.status == "awaiting"
    assert fake.move_clock(dt.timedelta(days=1)) == 0  # its charge settles the payment
    token = client.issuer_tokens.retrieve_three_ds(STORE, charge.id)
    assert token.payload is not None
    held = fake.state.charges[str(charge.id)]
    assert held.three_ds == three_ds and held.initial_metadata == {"o": 7}
    fake.state.finish_three_ds(str(charge.id), passed=True)
    paid = client.subscriptions.retrieve(STORE, sub.id)
    assert paid.status == "current" and paid.next_payment is not None
    assert events(fake) == ["subscription_created", "subscription_payment"]
    # The renewal is the merchant's: no challenge, though the card asks for one.
    assert fake.move_clock(dt.timedelta(days=31)) == 1
    statuses = sorted(str(c.status) for c in client.subscriptions.charges(STORE, sub.id))
    assert statuses == ["successful", "successful"]


def test_a_failed_3ds_challenge_leaves_the_subscription_unpaid(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    sub = subscribe(fake, client, card=CARD_THREE_DS)
    [charge] = client.subscriptions.charges(STORE, sub.id)
    fake.state.finish_three_ds(str(charge.id), passed=False)
    assert client.subscriptions.retrieve(STORE, sub.id).status == "unpaid"
    assert events(fake) == ["subscription_created", "subscription_failure"]


def test_a_konbini_subscription_waits_for_each_store_payment(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    token = fake.create_transaction_token("konbini", type="subscription")["id"]
    created = client.subscriptions.create(
        transaction_token_id=token, amount=1000, currency="JPY", period="monthly"
    )
    [first] = client.subscriptions.charges(STORE, created.id)
    assert first.status == "awaiting"
    assert client.subscriptions.retrieve(STORE, created.id).status == "unverified"
    fake.state.complete(str(first.id))
    assert client.subscriptions.retrieve(STORE, created.id).status == "current"
    assert fake.move_clock(dt.timedelta(days=31)) == 1
    renewal = [c for c in client.subscriptions.charges(STORE, created.id) if c.id != first.id]
    assert [c.status for c in renewal] == ["awaiting"]
    assert fake.move_clock(dt.timedelta(days=1)) == 0  # not charged twice while it waits
    fake.state.complete(str(renewal[0].id))
    payments = list(client.subscriptions.payments(STORE, created.id))
    assert sorted(bool(p.is_paid) for p in payments) == [False, True, True]


@pytest.mark.parametrize("payment_type", ["bank_transfer", "online"])
def test_create_refuses_a_payment_type_that_cannot_subscribe(
    fake: FakeGateway, client: PayChargeClient, payment_type: str
) -> None:
    token = fake.create_transaction_token(payment_type, type="subscription")["id"]
    with pytest.raises(APIError) as refused:
        client.subscriptions.create(
            transaction_token_id=token, amount=1000, currency="JPY", period="monthly"
        )
    assert refused.value.code == "UNSUPPORTED_PAYMENT_TYPE"
    assert fake.state.subscriptions == {}


def test_create_refuses_a_one_time_token_and_bad_bodies(
    fake: FakeGateway, client: PayChargeClient
) -> None:
    one_time = fake.create_transaction_token()["id"]
    with pytest.raises(APIError) as wrong:
        client.subscriptions.create(
            transaction_token_id=one_time, amount=1000, currency="JPY", period="monthly"
        )
    assert wrong.value.code == "NOT_SUBSCRIPTION_TOKEN"
    answer = requests.post(  # a body our client would never send: no token, no period
        fake.base_url + "/subscriptions",
        json={"amount": 10, "currency": "JPY"},
        headers={"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"},
        timeout=10,
    )
    assert answer.status_code == 400 and answer.json()["code"] == "VALIDATION_ERROR"
    fields = {e["field"] for e in answer.json()["errors"]}
    assert fields == {"transaction_token_id", "period"}


def test_simulation_and_calendar() -> None:
    assert add_months(dt.date(2025, 1, 31), 1) == dt.date(2025, 2, 28)
    assert due_date(dt.date(2025, 1, 31), 1, None, "P1M10D") == dt.date(2025, 3, 10)
    assert due_date(dt.date(2025, 1, 31), 2, "monthly", None) == dt.date(2025, 3, 31)
    assert due_date(dt.date(2025, 1, 1), 3, "biweekly", None) == dt.date(2025, 2, 12)


def test_simulate_plan(fake: FakeGateway, client: PayChargeClient) -> None:
    plan = client.subscriptions.simulate_plan(
        payment_type="card",
        amount=3000,
        currency="JPY",
        period="monthly",
        initial_amount=1000,
        installment_plan={"plan_type": "fixed_cycles", "fixed_cycles": 3},
        start_on="2030-01-31",
        store_id=STORE,
    )
    assert [(p.due_date, p.amount) for p in plan] == [
        (dt.date(2030, 1, 31), 1000),
        (dt.date(2030, 2, 28), 3000),
        (dt.date(2030, 3, 31), 3000),
    ]
    assert [p.is_last_payment for p in plan] == [False, False, True]
