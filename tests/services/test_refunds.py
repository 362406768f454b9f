"""refund_charge: the gateway's rules, checked locally and remotely, exactly once."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.client.lifecycle_parsing import parse_refund
from django_paycharge.exceptions import (
    BadRequestError,
    ChargeStateError,
    InvalidParametersError,
    NetworkError,
    PayChargeError,
    UnsupportedPaymentTypeError,
)
from django_paycharge.models import ChargeActionRequest, Refund
from django_paycharge.services.lifecycle_store import store_refund

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    return services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")


def refund_posts(gateway) -> list[dict[str, Any]]:
    return [
        r for r in gateway.requests_log if r["method"] == "POST" and r["path"].endswith("/refunds")
    ]


def test_a_full_refund_by_default_ends_successful_with_its_signals(
    fake_gateway, paid, caught, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        refund = services.refund_charge(paid, reason="customer_request", requested_by="alice")
    assert refund.amount == 1000 and refund.currency == "JPY"
    assert refund.status == "successful"  # the one read after the pending answer
    assert refund.reason == "customer_request"
    assert refund.charge_id == paid.pk and refund.raw["charge_id"] == str(paid.gateway_id)
    assert paid.refunded_amount == 1000
    request = ChargeActionRequest.objects.get()
    assert (request.kind, request.state, request.refund_id) == ("refund", "succeeded", refund.pk)
    assert request.requested_by == "alice"
    assert [s["refund"].pk for s in caught["refund_created"]] == [refund.pk]
    changes = [(s["previous_status"], s["status"]) for s in caught["refund_status_changed"]]
    assert changes == [(None, "pending"), ("pending", "successful")]
    [post] = refund_posts(fake_gateway)
    assert post["headers"]["idempotency-key"] == request.idempotency_key


def test_partial_refunds_add_up_and_more_is_refused_before_sending(fake_gateway, paid):
    services.refund_charge(paid, amount=300)
    services.refund_charge(paid, amount=700, currency="jpy")
    assert paid.refunded_amount == 1000
    with pytest.raises(ChargeStateError, match="Nothing is left"):
        services.refund_charge(paid)
    with pytest.raises(InvalidParametersError) as info:
        services.refund_charge(paid, amount=1)
    assert [e.field for e in info.value.errors] == ["amount"]
    assert len(refund_posts(fake_gateway)) == 2
    assert ChargeActionRequest.objects.count() == 2


def test_the_gateway_refuses_what_the_mirror_did_not_know(fake_gateway, paid):
    # A refund made elsewhere (the gateway's dashboard): the gateway is the judge.
    store, charge = paid.store_id, paid.gateway_id
    answer = fake_gateway.request(
        "POST", f"/stores/{store}/charges/{charge}/refunds", {"amount": 900, "currency": "JPY"}
    )
    assert answer.status == 201
    with pytest.raises(BadRequestError) as info:
        services.refund_charge(paid, amount=500)
    assert info.value.errors[0].field == "amount"
    request = ChargeActionRequest.objects.get()
    assert request.state == "failed" and request.error["http_status"] == 400
    assert request.error["outcome"] == "refused"  # the record a charge request keeps, too
    assert Refund.objects.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "fields"),
    [
        ({"amount": 0}, ["amount"]),
        ({"amount": 10, "currency": "USD"}, ["currency"]),
        ({"amount": 10, "reason": "chargeback"}, ["reason"]),  # not one a merchant may send
        ({"amount": 10, "message": ""}, ["message"]),
        ({"amount": 10, "metadata": {"nested": {"no": 1}}}, ["metadata.nested"]),
    ],
)
def test_invalid_input_is_refused_and_nothing_is_sent(fake_gateway, paid, kwargs, fields):
    with pytest.raises(InvalidParametersError) as info:
        services.refund_charge(paid, **kwargs)
    assert [e.field for e in info.value.errors] == fields
    assert refund_posts(fake_gateway) == []
    assert ChargeActionRequest.objects.count() == 0


def test_only_successful_charges_and_refundable_payment_types(fake_gateway):
    card = fake_gateway.create_transaction_token("card")["id"]
    authorized = services.create_charge(
        transaction_token_id=card, amount=500, currency="JPY", capture=False
    )
    with pytest.raises(ChargeStateError) as info:
        services.refund_charge(authorized)
    assert info.value.status == "authorized"
    konbini = fake_gateway.create_transaction_token("konbini")["id"]
    awaiting = services.create_charge(transaction_token_id=konbini, amount=500, currency="JPY")
    fake_gateway.complete(str(awaiting.gateway_id))
    with pytest.raises(UnsupportedPaymentTypeError):
        services.refund_charge(awaiting)
    assert refund_posts(fake_gateway) == []


def test_the_same_key_twice_gives_one_refund(fake_gateway, paid):
    key = uuid.uuid4()
    first = services.refund_charge(paid, amount=400, idempotency_key=key)
    again = services.refund_charge(paid, amount=400, idempotency_key=key)
    left = services.refund_charge(paid, idempotency_key=key)  # "what is left" finds it too
    assert first.pk == again.pk == left.pk
    assert len(refund_posts(fake_gateway)) == 1
    with pytest.raises(PayChargeError, match="different request"):
        services.refund_charge(paid, amount=401, idempotency_key=key)


def test_a_caller_key_that_is_not_a_uuid_is_kept_as_sent(fake_gateway, paid):
    refund = services.refund_charge(paid, amount=10, idempotency_key="order-17-refund-1")
    [post] = refund_posts(fake_gateway)
    assert post["headers"]["idempotency-key"] == "order-17-refund-1"
    assert ChargeActionRequest.objects.get().refund_id == refund.pk


def test_a_lost_answer_is_retried_with_the_same_key_and_refunds_once(fake_gateway, paid):
    fake_gateway.add_fault("POST", r"/refunds$", action="drop_after", count=2)
    refund = services.refund_charge(paid, amount=250)
    posts = refund_posts(fake_gateway)
    assert len(posts) == 3
    assert len({p["headers"]["idempotency-key"] for p in posts}) == 1
    assert len(fake_gateway.state.refunds) == 1
    assert Refund.objects.get().pk == refund.pk


def test_a_refund_left_pending_is_settled_by_recover_with_one_remote_refund(
    fake_gateway, paid, settings
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    fake_gateway.add_fault("POST", r"/refunds$", action="drop_after", count=1)
    with pytest.raises(NetworkError):
        services.refund_charge(paid, amount=600)
    request = ChargeActionRequest.objects.get()
    assert request.state == "pending" and Refund.objects.count() == 0
    assert len(fake_gateway.state.refunds) == 1  # the gateway did refund
    counts = services.recover_action_requests(older_than=timedelta(0))
    assert counts == {"settled": 1, "failed": 0, "still_pending": 0}
    assert len(fake_gateway.state.refunds) == 1
    request.refresh_from_db()
    assert request.state == "succeeded" and request.refund is not None
    assert request.refund.amount == 600
    paid.refresh_from_db()
    assert services.refundable_amount(paid) == 400


def test_a_refund_that_fails_later_reports_its_status(
    fake_gateway, paid, caught, django_capture_on_commit_callbacks
):
    fake_gateway.processing_delay = 60  # stays pending until the control below
    with django_capture_on_commit_callbacks(execute=True):
        refund = services.refund_charge(paid, amount=100)
    assert refund.status == "pending"
    paid.refresh_from_db()
    assert services.refundable_amount(paid) == 900  # a pending refund counts
    fake_gateway.state.fail_refund(str(refund.gateway_id))
    with django_capture_on_commit_callbacks(execute=True):
        counts = services.sync_refunds()
    assert counts == {"charges": 1, "refunds": 1, "cancels": 0, "failed": 0, "quarantined": 0,
                      "quarantined_new": 0, "quarantined_retriable": 0}  # fmt: skip
    refund.refresh_from_db()
    assert refund.status == "failed" and refund.error["code"] == 329
    assert services.refundable_amount(paid) == 1000  # a failed one gave nothing back
    assert caught["refund_status_changed"][-1]["status"] == "failed"


def test_a_stale_pending_read_never_takes_a_refund_back(fake_gateway, paid):
    refund = services.refund_charge(paid, amount=100)
    assert refund.status == "successful"
    stale = {**refund.raw, "status": "pending"}
    kept = store_refund(parse_refund(stale), charge=paid)
    assert kept.status == "successful"
    assert Refund.objects.get().status == "successful"
