"""Saved cards: charged through the one exactly-once create, refused locally by what the mirror
knows of the token, and their token events mirrored and announced once."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.client import parse_transaction_token
from django_paycharge.client.token_vocabulary import (
    CVV_AUTHORIZATION_NOT_COMPLETED,
    NON_SUBSCRIPTION_PAYMENT,
    RECURRING_TOKEN_DISABLED,
    RECURRING_USAGE_REQUIRES_CVV,
    TRANSACTION_TOKEN_IS_NOT_RECURRING,
    USAGE_LIMIT_REACHED,
)
from django_paycharge.exceptions import BadRequestError, InvalidParametersError, SavedCardError
from django_paycharge.models import ChargeRequest, TransactionTokenInfo
from django_paycharge.services.mirror import store_saved_card
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery
from django_paycharge.testing import TEST_STORE_ID, TEST_WIDGET_JWT
from tests.services.listening import listening

pytestmark = pytest.mark.django_db

NAMES = ("saved_card_replaced", "saved_card_deleted")
TOKENS = f"/stores/{TEST_STORE_ID}/tokens"


@pytest.fixture
def heard() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    with listening(NAMES, TransactionTokenInfo) as said:
        yield said


def posted_charges(gateway: Any) -> int:
    return sum(1 for r in gateway.requests_log if (r["method"], r["path"]) == ("POST", "/charges"))


def pay(token: str, key: str | None = None, amount: int = 1500) -> Any:
    return services.charge_saved_card(
        transaction_token_id=token, amount=amount, currency="JPY", idempotency_key=key
    )


def webhook(event: str, token_id: str, capture: Any) -> str:
    body = {"id": str(uuid.uuid4()), "event": event, "data": {"id": token_id}}
    with capture(execute=True):
        delivery, _ = store_delivery(body=json.dumps(body).encode(), headers={}, account="default")
        return process_delivery(delivery.pk)


def test_a_saved_card_is_charged_again_and_again_each_charge_once(fake_gateway):
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    first = pay(token, "order-1-pay-1")
    again = pay(token, "order-1-pay-1")  # a double submit: the same request
    second = pay(token, "order-2-pay-1")
    assert first.pk == again.pk != second.pk
    assert {first.status, second.status} == {"pending"}  # as answered; paid right after
    assert first.transaction_token_type == "recurring"
    assert posted_charges(fake_gateway) == 2
    assert ChargeRequest.objects.count() == 2


def test_the_gateways_usage_limit_is_a_refusal_for_good(fake_gateway):
    token = fake_gateway.create_transaction_token(type="recurring", usage_limit="monthly")["id"]
    pay(token, "month-1")
    with pytest.raises(BadRequestError) as refused:
        pay(token, "month-1-again")
    assert (refused.value.code, refused.value.outcome) == (USAGE_LIMIT_REACHED, "refused")
    assert ChargeRequest.objects.get(caller_key="month-1-again").state == "failed"
    fake_gateway.move_clock(timedelta(days=31))
    assert pay(token, "month-2").status == "pending"


@pytest.mark.parametrize(
    ("kind", "code"),
    [("one_time", TRANSACTION_TOKEN_IS_NOT_RECURRING), ("subscription", NON_SUBSCRIPTION_PAYMENT)],
)
def test_a_token_the_mirror_knows_is_not_a_saved_card_is_refused_locally(fake_gateway, kind, code):
    token = fake_gateway.create_transaction_token(type=kind)["id"]
    services.refresh_saved_card(token)
    with pytest.raises(SavedCardError) as refused:
        pay(token, "k")
    assert (refused.value.code, refused.value.outcome) == (code, "refused")
    assert posted_charges(fake_gateway) == 0 and not ChargeRequest.objects.exists()


def test_an_unknown_token_is_left_to_the_gateway(fake_gateway):
    token = fake_gateway.create_transaction_token(type="subscription")["id"]
    with pytest.raises(BadRequestError) as refused:
        pay(token, "k")
    assert refused.value.code == NON_SUBSCRIPTION_PAYMENT  # the gateway's own answer
    assert posted_charges(fake_gateway) == 1


def test_cvv_authorization_first_when_the_store_requires_it(fake_gateway):
    fake_gateway.require_cvv_authorization()
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    fake_gateway.set_cvv_authorization(token, "pending")
    assert services.refresh_saved_card(token).cvv_authorization_status == "pending"
    with pytest.raises(SavedCardError) as refused:
        pay(token, "k")
    assert refused.value.code == CVV_AUTHORIZATION_NOT_COMPLETED
    assert posted_charges(fake_gateway) == 0
    fake_gateway.set_cvv_authorization(token, "current")
    assert services.refresh_saved_card(token).cvv_authorization_status == "current"
    assert pay(token, "k").status == "pending"


def test_the_same_key_after_the_card_was_deleted_answers_the_charge_it_made(fake_gateway):
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    charge = pay(token, "order-9")
    services.delete_saved_card(token)
    assert pay(token, "order-9").pk == charge.pk
    with pytest.raises(SavedCardError) as refused:
        pay(token, "order-10")
    assert refused.value.code == RECURRING_TOKEN_DISABLED


def test_broken_arguments_are_named_before_the_token_is_looked_at(fake_gateway):
    with pytest.raises(InvalidParametersError):
        services.charge_saved_card(transaction_token_id="nope", amount=-1, currency="JPY")


def test_a_renewal_is_heard_once_as_replaced(
    fake_gateway, heard, django_capture_on_commit_callbacks
):
    old = fake_gateway.create_transaction_token(type="recurring", usage_limit="monthly")["id"]
    services.refresh_saved_card(old)
    renewed = fake_gateway.request("POST", f"{TOKENS}/{old}/renew", {"data": {"exp_year": 2100}})
    new = renewed.json()["id"]
    assert webhook("token_replaced", new, django_capture_on_commit_callbacks) == "processed"
    assert webhook("token_replaced", new, django_capture_on_commit_callbacks) == "processed"
    assert [(name, kw["saved_card"].token_id, kw["previous_token_id"]) for name, kw in heard] == [
        ("saved_card_replaced", uuid.UUID(new), old)
    ]
    # The old card, read later, is replaced (inactive), never announced deleted.
    assert services.refresh_saved_card(old).active is False
    assert [name for name, _ in heard] == ["saved_card_replaced"]
    row = TransactionTokenInfo.objects.get(token_id=new)
    assert (row.usage_limit, row.card_exp_year, row.card_last_four) == ("monthly", 2100, "4242")


def test_a_deletion_is_heard_once_whichever_way_it_comes(
    fake_gateway, heard, django_capture_on_commit_callbacks
):
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    assert webhook("token_created", token, django_capture_on_commit_callbacks) == "processed"
    with django_capture_on_commit_callbacks(execute=True):
        row = services.delete_saved_card(token)
    assert (row.active, row.status_rank) == (False, 1)
    webhook("recurring_token_deleted", token, django_capture_on_commit_callbacks)
    assert [(name, kw["saved_card"].pk) for name, kw in heard] == [("saved_card_deleted", row.pk)]


def test_a_stale_read_never_makes_a_deleted_card_active_again(fake_gateway, heard):
    body = fake_gateway.create_transaction_token(type="recurring")
    remote = parse_transaction_token(body)
    store_saved_card(dataclasses.replace(remote, active=False), account="default")
    row = store_saved_card(remote, account="default")  # an older read, active
    assert (row.active, TransactionTokenInfo.objects.get().active) == (False, False)


def test_a_token_the_gateway_no_longer_knows_is_mirrored_deleted(
    fake_gateway, heard, django_capture_on_commit_callbacks
):
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    services.refresh_saved_card(token)
    fake_gateway.state.tokens.pop(token)
    assert webhook("recurring_token_deleted", token, django_capture_on_commit_callbacks) == (
        "processed"
    )
    row = TransactionTokenInfo.objects.get(token_id=token)
    assert (row.active, row.state) == (False, "not_found")
    assert [name for name, _ in heard] == ["saved_card_deleted"]


def test_a_store_that_asks_the_cvv_again_refuses_until_the_customer_gives_it(fake_gateway):
    fake_gateway.require_cvv_confirmation()
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    key = services.payment_attempt_key("order-5")
    with pytest.raises(BadRequestError) as refused:
        pay(token, key)
    assert (refused.value.code, refused.value.outcome) == (RECURRING_USAGE_REQUIRES_CVV, "refused")
    # The customer's page sends the security code from the browser (Bearer jwt alone).
    browser = {"Authorization": f"Bearer {TEST_WIDGET_JWT}"}
    path = f"{TOKENS}/{token}"
    assert (
        fake_gateway.request("PATCH", path, {"data": {"cvv": "123"}}, headers=browser).status == 200
    )
    again = services.payment_attempt_key("order-5")  # the refused attempt charged nothing
    assert again != key
    assert pay(token, again).status == "pending"
