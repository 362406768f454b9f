"""Subscriptions in the client: tolerant reads, create rules, the transition table, the calls."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from django_paycharge.client import PayChargeClient, SubscriptionCreateParams
from django_paycharge.client.parsing import ShapeError
from django_paycharge.client.subscription_params import PlanSimulationParams
from django_paycharge.client.subscription_parsing import (
    parse_scheduled_payment,
    parse_simulation,
    parse_subscription,
)
from django_paycharge.client.subscription_vocabulary import (
    SUBSCRIPTION_STATUSES,
    TRANSITIONS,
    refusal,
    subscription_status_rank,
)
from django_paycharge.exceptions import InvalidParametersError

from .conftest import BASE, STORE, TOKEN

SUB = "11efe2d1-b782-1358-b3e0-d7b500e13963"
PAYMENT = "11efe2d1-b7aa-47b0-b3e2-ff60b09e411c"

# univapay-java-sdk src/test/resources/responses/subscription/subscription-finite-unverified.json
# (ids of ours where the client checks them).
RECORDED: dict[str, Any] = {
    "id": SUB,
    "store_id": STORE,
    "transaction_token_id": TOKEN,
    "amount": 1000,
    "currency": "JPY",
    "amount_formatted": 1000,
    "initial_amount": 250,
    "initial_amount_formatted": 250,
    "subsequent_cycles_start": None,
    "schedule_settings": {
        "start_on": "2025-02-10",
        "zone_id": "Asia/Tokyo",
        "preserve_end_of_month": None,
        "retry_interval": None,
        "termination_mode": "immediate",
    },
    "only_direct_currency": False,
    "first_charge_capture_after": None,
    "first_charge_authorization_only": False,
    "status": "unverified",
    "metadata": {},
    "mode": "test",
    "created_on": "2025-02-04T08:26:22.656907Z",
    "three_ds": {
        "mode": "normal",
        "redirect_endpoint": "https://website.com/subscription-three-ds-callback-as-example",
        "redirect_id": "11efe2d1-b859-0a37-9295-6bedf0f71e70",
    },
    "period": "monthly",
    "updated_on": "2025-02-04T08:26:22.656907Z",
    "next_payment": {
        "id": PAYMENT,
        "due_date": "2025-02-04",
        "zone_id": "Asia/Tokyo",
        "amount": 250,
        "currency": "JPY",
        "amount_formatted": 250,
        "is_paid": False,
        "is_last_payment": False,
        "created_on": "2025-02-04T08:26:22.656907Z",
        "updated_on": "2025-02-04T08:26:22.656907Z",
        "retry_date": None,
    },
    "cycles_left": 3,
    "subscription_plan": {"plan_type": "fixed_cycles", "fixed_cycles": 3},
    "amount_left": 1000,
    "amount_left_formatted": 1000,
}


def test_recorded_subscription_typed() -> None:
    sub = parse_subscription(json.loads(json.dumps(RECORDED), parse_float=Decimal))
    assert sub.id == uuid.UUID(SUB) and sub.store_id == uuid.UUID(STORE)
    assert (sub.status, sub.period, sub.mode, sub.currency) == (
        "unverified",
        "monthly",
        "test",
        "JPY",
    )
    assert (sub.amount, sub.initial_amount, sub.amount_left, sub.cycles_left) == (
        1000,
        250,
        1000,
        3,
    )
    assert sub.amount_formatted == Decimal(1000) and sub.payments_left is None
    assert sub.created_on == datetime(2025, 2, 4, 8, 26, 22, 656907, tzinfo=UTC)
    assert sub.schedule_settings is not None
    assert sub.schedule_settings.start_on == date(2025, 2, 10)
    assert sub.schedule_settings.termination_mode == "immediate"
    assert sub.subscription_plan is not None and sub.subscription_plan.fixed_cycles == 3
    assert sub.installment_plan is None
    assert sub.three_ds is not None and sub.three_ds.mode == "normal"
    assert sub.next_payment is not None and sub.next_payment.due_date == date(2025, 2, 4)
    assert sub.next_payment.is_paid is False and sub.next_payment.retry_date is None
    assert sub.raw["subsequent_cycles_start"] is None  # unknown fields stay in raw


def test_odd_fields_are_none_and_kept_in_raw() -> None:
    odd = {
        "id": SUB,
        "store_id": "not-a-uuid",
        "amount": "1000",
        "amount_left": 12.5,
        "status": "paused_by_gateway",
        "schedule_settings": "monthly",
        "next_payment": {"due_date": "2025-02-04"},  # no id: the subscription still reads
        "created_on": "yesterday",
        "subscription_plan": {"plan_type": "fixed_cycles", "fixed_cycles": "x"},
    }
    sub = parse_subscription(odd)
    assert sub.store_id is None and sub.amount == 1000 and sub.amount_left is None
    assert sub.status == "paused_by_gateway" and sub.schedule_settings is None
    assert sub.next_payment is None and sub.created_on is None
    assert sub.subscription_plan is not None and sub.subscription_plan.fixed_cycles is None
    assert sub.raw is odd
    with pytest.raises(ShapeError):
        parse_subscription({"status": "current"})
    with pytest.raises(ShapeError):
        parse_scheduled_payment({"id": 7})


def test_simulation_read_as_list_or_indexed_object() -> None:
    item = {"due_date": "2025-03-01", "amount": 500, "currency": "JPY", "is_last_payment": False}
    last = {**item, "due_date": "2025-04-01", "is_last_payment": True}
    as_list = parse_simulation([item, last, "junk"])
    as_object = parse_simulation({"1": last, "0": item})
    assert [p.due_date for p in as_list] == [date(2025, 3, 1), date(2025, 4, 1)]
    assert [p.due_date for p in as_object] == [date(2025, 3, 1), date(2025, 4, 1)]
    with pytest.raises(ShapeError):
        parse_simulation("nope")


FULL = SubscriptionCreateParams(
    transaction_token_id=uuid.UUID(TOKEN),
    amount=1000,
    currency="jpy",
    period="monthly",
    initial_amount=250,
    subscription_plan={"plan_type": "fixed_cycles", "fixed_cycles": 3},
    three_ds_redirect_endpoint="https://website.com/cb",
    start_on=date(2025, 2, 10),
    zone_id="Asia/Tokyo",
    termination_mode="on_next_payment",
    metadata={"order": 1},
)


def test_create_body_has_the_sdk_shape() -> None:
    # The shape of univapay-java-sdk requests/subscription/subscription-finite.json.
    assert FULL.to_body() == {
        "transaction_token_id": TOKEN,
        "amount": 1000,
        "currency": "JPY",
        "period": "monthly",
        "initial_amount": 250,
        "subscription_plan": {"plan_type": "fixed_cycles", "fixed_cycles": 3},
        "three_ds": {"redirect_endpoint": "https://website.com/cb"},
        "schedule_settings": {
            "start_on": "2025-02-10",
            "zone_id": "Asia/Tokyo",
            "termination_mode": "on_next_payment",
        },
        "metadata": {"order": 1},
    }


def fields_of(error: InvalidParametersError) -> set[str]:
    return {e.field for e in error.errors}


@pytest.mark.parametrize(
    ("changes", "fields"),
    [
        ({"period": None}, {"period"}),
        ({"cyclical_period": "P1M"}, {"period"}),
        ({"period": "fortnightly"}, {"period"}),
        ({"period": None, "cyclical_period": "P0D"}, {"cyclical_period"}),
        ({"period": None, "cyclical_period": "PT1H"}, {"cyclical_period"}),
        ({"subscription_plan": {"plan_type": "revolving"}}, {"subscription_plan.plan_type"}),
        ({"installment_plan": {"plan_type": "fixed_cycles"}}, {"installment_plan.fixed_cycles"}),
        ({"first_charge_capture_after": "P7D"}, {"first_charge_capture_after"}),
        (
            {"zone_id": "Mars/Olympus", "start_on": "2025-2-1"},
            {"schedule_settings.zone_id", "schedule_settings.start_on"},
        ),
        (
            {"termination_mode": "later", "amount": 0},
            {"schedule_settings.termination_mode", "amount"},
        ),
    ],
)
def test_create_rules_name_every_broken_field(changes: dict[str, Any], fields: set[str]) -> None:
    params = SubscriptionCreateParams(**{**FULL.to_dict(), **changes})
    with pytest.raises(InvalidParametersError) as caught:
        params.to_body()
    assert fields_of(caught.value) == fields


def test_cyclical_period_and_capture_after_accepted() -> None:
    params = SubscriptionCreateParams(
        transaction_token_id=TOKEN,
        amount=500,
        currency="JPY",
        cyclical_period="P10D",
        first_charge_authorization_only=True,
        first_charge_capture_after="P7D",
        installment_plan={"plan_type": "revolving"},
    )
    body = params.to_body()
    assert body["cyclical_period"] == "P10D" and "period" not in body
    assert body["installment_plan"] == {"plan_type": "revolving"}


# The rules of univapay-php-sdk src/Univapay/Resources/Subscription.php, transcribed on their
# own: patch() (canceled refuses all; token needs isTokenPatchable; period and plans need
# isEditable; status current/unpaid -> suspended, suspended -> unpaid) and cancel() (isTerminal).
PHP_EDITABLE = {"unverified", "unconfirmed"}
PHP_TOKEN_PATCHABLE = {"unconfirmed", "unpaid", "current", "suspended"}
PHP_TERMINAL = {"canceled", "completed"}


def php_sdk_refusal(action: str, status: str) -> str | None:
    if action == "cancel":
        return "SUBSCRIPTION_ALREADY_ENDED" if status in PHP_TERMINAL else None
    if status == "canceled":
        return "CANNOT_CHANGE_CANCELED_SUBSCRIPTION"
    if action == "change_token":
        return None if status in PHP_TOKEN_PATCHABLE else "CANNOT_CHANGE_TOKEN"
    if action == "change_period":
        return None if status in PHP_EDITABLE else "CANNOT_SET_AFTER_SUBSCRIPTION_STARTED"
    if action == "change_plan":
        return None if status in PHP_EDITABLE else "PLAN_ALREADY_SET"
    allowed = {"suspend": {"current", "unpaid"}, "unsuspend": {"suspended"}}[action]
    return None if status in allowed else "FORBIDDEN_PARAMETER"


@pytest.mark.parametrize("action", sorted(TRANSITIONS))
@pytest.mark.parametrize("status", SUBSCRIPTION_STATUSES)
def test_transition_table_matches_the_php_sdk(action: str, status: str) -> None:
    assert refusal(action, status) == php_sdk_refusal(action, status)


def test_unknown_status_left_to_the_gateway_and_ranks() -> None:
    assert refusal("suspend", "paused_by_gateway") is None and refusal("cancel", None) is None
    ranks = [subscription_status_rank(s) for s in SUBSCRIPTION_STATUSES]
    assert ranks == sorted(ranks)
    assert subscription_status_rank("current") == subscription_status_rank("suspended")
    assert subscription_status_rank("canceled") > subscription_status_rank("paused_by_gateway")


def test_create_sends_a_key_and_the_checked_body(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(f"{BASE}/subscriptions", json=RECORDED, status=201)
    sub = client.subscriptions.create(FULL, idempotency_key="sub-1")
    request = rsps.calls[0].request
    assert request.headers["Idempotency-Key"] == "sub-1"
    assert json.loads(request.body or b"") == FULL.to_body()
    assert sub.id == uuid.UUID(SUB)
    with pytest.raises(InvalidParametersError):
        client.subscriptions.create(transaction_token_id=TOKEN, amount=1, currency="JPY")
    assert len(rsps.calls) == 1  # refused before sending


def test_changes_go_to_their_routes(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    base = f"{BASE}/stores/{STORE}/subscriptions/{SUB}"
    rsps.patch(f"{base}/suspend", json={**RECORDED, "status": "suspended"})
    rsps.patch(f"{base}/unsuspend", json={**RECORDED, "status": "unpaid"})
    rsps.patch(f"{base}/token", json=RECORDED)
    rsps.delete(base, status=204)
    assert client.subscriptions.suspend(STORE, SUB).status == "suspended"
    assert client.subscriptions.unsuspend(STORE, SUB).status == "unpaid"
    client.subscriptions.change_token(STORE, SUB, transaction_token_id=TOKEN)
    client.subscriptions.suspend(STORE, SUB, termination_mode="on_next_payment")
    client.subscriptions.cancel(STORE, SUB)
    token_call, later, cancel_call = (c.request for c in rsps.calls[2:5])
    assert json.loads(token_call.body or b"") == {"transaction_token_id": TOKEN}
    assert json.loads(later.body or b"") == {
        "schedule_settings": {"termination_mode": "on_next_payment"}
    }
    assert (cancel_call.method, cancel_call.body) == ("DELETE", None)  # the SDKs send no body
    assert all("Idempotency-Key" in c.request.headers for c in rsps.calls)


def test_payments_and_simulation(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    base = f"{BASE}/stores/{STORE}/subscriptions/{SUB}"
    payment = RECORDED["next_payment"]
    rsps.get(f"{base}/payments", json={"items": [payment, {"bad": 1}], "has_more": False})
    rsps.post(f"{BASE}/stores/{STORE}/subscriptions/simulate_plan", json=[payment])
    rejected: list[Any] = []
    payments = list(client.subscriptions.payments(STORE, SUB, rejected=rejected))
    assert [p.id for p in payments] == [uuid.UUID(PAYMENT)] and len(rejected) == 1
    plan = PlanSimulationParams(payment_type="card", amount=1000, currency="JPY", period="monthly")
    simulated = client.subscriptions.simulate_plan(plan, store_id=STORE)
    assert simulated[0].amount == 250
    assert json.loads(rsps.calls[1].request.body or b"")["payment_type"] == "card"
