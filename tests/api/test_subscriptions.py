"""Subscription endpoints: staff reads, creates and changes with Idempotency-Key, refusals."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from django_paycharge.models import Subscription, SubscriptionRequest

from .conftest import API, _user, assert_error

pytestmark = pytest.mark.django_db

PLAN: dict[str, Any] = {"amount": 1200, "currency": "JPY", "period": "monthly"}
URL = f"{API}/subscriptions/"


@pytest.fixture
def operator(db: Any) -> APIClient:
    """Staff holding every subscription change's permission."""
    client = APIClient()
    perms = (
        "suspend_subscription",
        "resume_subscription",
        "cancel_subscription",
        "change_subscription_card",
    )
    client.force_login(_user("operator", staff=True, perms=perms))
    return client


def token(gateway: Any) -> str:
    return str(gateway.create_transaction_token(type="subscription")["id"])


def create(client: APIClient, gateway: Any, key: str = "order-1-sub") -> dict[str, Any]:
    body = {"transaction_token_id": token(gateway), **PLAN, "metadata": {"order": "1"}}
    response = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 201, response.json()
    data: dict[str, Any] = response.json()
    return data


def test_create_replays_with_its_key_and_lists(gateway, operator):
    body = {"transaction_token_id": token(gateway), **PLAN}
    headers = {"HTTP_IDEMPOTENCY_KEY": "order-7-sub"}
    first = operator.post(URL, body, format="json", **headers)
    again = operator.post(URL, body, format="json", **headers)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert again["Idempotency-Status"] == "retrieved_idempotent_response"
    assert len(gateway.state.subscriptions) == 1 == SubscriptionRequest.objects.count()
    assert SubscriptionRequest.objects.get().idempotency_key.startswith("api-")
    other = operator.post(URL, {**body, "amount": 99}, format="json", **headers)
    assert_error(other, 409, "idempotency_key_reused")
    data = first.json()
    assert (data["amount"], data["currency"], data["period"]) == (1200, "JPY", "monthly")
    listed = operator.get(URL).json()
    assert [s["id"] for s in listed["items"]] == [data["id"]] and listed["has_more"] is False
    assert operator.get(f"{URL}{data['id']}/").json()["id"] == data["id"]
    payments = operator.get(f"{URL}{data['id']}/scheduled_payments/")
    assert payments.status_code == 200 and payments.json()[0]["amount"] == 1200


def test_a_rule_of_the_params_is_a_validation_error(gateway, operator):
    body = {"transaction_token_id": token(gateway), "amount": 1200, "currency": "JPY"}
    response = operator.post(URL, body, format="json")  # neither period nor cyclical_period
    assert_error(response, 400, "validation_error")
    unknown = operator.post(URL, {**body, "period": "monthly", "colour": "red"}, format="json")
    assert_error(unknown, 400, "validation_error")
    assert SubscriptionRequest.objects.count() == 0


def test_changes_and_a_refusal_mapped_to_409(gateway, operator):
    made = create(operator, gateway)
    base = f"{URL}{made['id']}"
    refused = operator.post(f"{base}/resume/", format="json", HTTP_IDEMPOTENCY_KEY="r-1")
    body = assert_error(refused, 409, "subscription_status")
    assert (body["status"], body["reason"]) == ("current", "FORBIDDEN_PARAMETER")
    suspend = {"termination_mode": "immediate"}
    first = operator.post(f"{base}/suspend/", suspend, format="json", HTTP_IDEMPOTENCY_KEY="s-1")
    again = operator.post(f"{base}/suspend/", suspend, format="json", HTTP_IDEMPOTENCY_KEY="s-1")
    assert first.json()["status"] == "suspended" and again.json() == first.json()
    assert again["Idempotency-Status"] == "retrieved_idempotent_response"
    assert SubscriptionRequest.objects.filter(kind="subscription_suspend").count() == 1
    assert operator.post(f"{base}/resume/", format="json").json()["status"] == "unpaid"
    card = {"transaction_token_id": token(gateway)}
    changed = operator.post(f"{base}/card/", card, format="json")
    assert changed.json()["transaction_token_id"] == card["transaction_token_id"]
    assert operator.post(f"{base}/cancel/", format="json").json()["status"] == "canceled"
    ended = operator.post(f"{base}/cancel/", format="json")
    assert assert_error(ended, 409, "subscription_status")["reason"] == "SUBSCRIPTION_ALREADY_ENDED"


def test_who_may(gateway, operator, staff, customer, anon):
    made = create(operator, gateway)
    base = f"{URL}{made['id']}"
    assert customer.get(URL).status_code == 403 and anon.get(base + "/").status_code in (401, 403)
    body = {"transaction_token_id": token(gateway), **PLAN}
    assert customer.post(URL, body, format="json").status_code == 403
    # Staff without the change's permission may read, not change.
    assert staff.get(base + "/").status_code == 200
    denied = assert_error(staff.post(f"{base}/suspend/", format="json"), 403, "permission_denied")
    assert denied["message"] == "You may not do this to subscriptions."
    assert Subscription.objects.get().status != "suspended"
    assert staff.get(f"{URL}{'0' * 8}/").status_code == 404
