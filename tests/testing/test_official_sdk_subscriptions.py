"""Contract: the gateway's official Python SDK drives the fake's subscription routes.

``univapay-client-sdk`` (generated from the gateway's OpenAPI description) creates,
reads, lists, suspends, resumes, re-cards and cancels a subscription, reads its
payments and charges and simulates a plan on the fake over real HTTP, and parses each
answer into its models: the fake speaks the gateway's subscription shapes.
"""

from __future__ import annotations

from univapayclientsdk.models.subscription_create_request import SubscriptionCreateRequest
from univapayclientsdk.models.subscription_patch_token_request import (
    SubscriptionPatchTokenRequest,
)
from univapayclientsdk.models.subscription_schedule_settings import SubscriptionScheduleSettings
from univapayclientsdk.models.subscription_simulation_request import (
    SubscriptionSimulationRequest,
)
from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

from django_paycharge.testing import TEST_STORE_ID

from .official_sdk import ok


def test_a_subscription_through_every_route(sdk: UnivapayClientSdkClient, fake_gateway_server):
    api = sdk.subscriptions
    token = fake_gateway_server.create_transaction_token(type="subscription")["id"]
    body = SubscriptionCreateRequest(
        transaction_token_id=token, amount=1000, currency="JPY", period="monthly"
    )
    created = ok(api.create_subscription("sub-1", body), 201)
    assert (created.status, created.amount, created.period) == ("unverified", 1000, "monthly")
    one = ok(api.get_subscription(TEST_STORE_ID, created.id), 200)
    assert one.status == "current" and one.next_payment.is_paid is False
    listed = ok(api.list_store_subscriptions(TEST_STORE_ID), 200)
    assert [s.id for s in listed.items] == [created.id]
    assert ok(api.suspend_subscription(TEST_STORE_ID, created.id), 200).status == "suspended"
    assert ok(api.unsuspend_subscription(TEST_STORE_ID, created.id), 200).status == "unpaid"
    card = fake_gateway_server.create_transaction_token(type="subscription")["id"]
    patch = SubscriptionPatchTokenRequest(transaction_token_id=card)
    changed = ok(api.update_subscription_token(TEST_STORE_ID, created.id, body=patch), 200)
    assert changed.transaction_token_id == card
    payments = ok(api.list_subscription_payments(TEST_STORE_ID, created.id), 200)
    assert [p.is_paid for p in payments.items] == [False, True]  # newest first
    ok(api.cancel_subscription(TEST_STORE_ID, created.id), 204)
    assert ok(api.get_subscription(TEST_STORE_ID, created.id), 200).status == "canceled"


def test_a_plan_simulation(sdk: UnivapayClientSdkClient):
    body = SubscriptionSimulationRequest(
        amount=3000,
        currency="JPY",
        payment_type="card",
        schedule_settings=SubscriptionScheduleSettings(start_on="2030-01-31"),
        period="monthly",
        installment_plan={"plan_type": "fixed_cycles", "fixed_cycles": 3},
    )
    plan = ok(sdk.subscriptions.simulate_store_subscription_plan(TEST_STORE_ID, body=body), 200)
    assert [str(p.due_date) for p in plan] == ["2030-01-31", "2030-02-28", "2030-03-31"]
