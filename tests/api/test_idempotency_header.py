"""The create endpoint's ``Idempotency-Key`` header: one charge per key, whatever is resent."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from django_paycharge.models import ApiIdempotencyRecord, Charge, ChargeRequest

from .conftest import assert_error
from .test_charge_create import STOREFRONT, URL

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(gateway):
    return gateway.create_transaction_token("card")["id"]


def post(client, body, key=None):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post(URL, json.dumps(body), content_type="application/json", **headers)


def test_the_same_key_and_body_replays_the_first_answer(staff, gateway, token):
    key = str(uuid.uuid4())
    body = {"transaction_token_id": token, "amount": 1200, "currency": "JPY"}
    first = post(staff, body, key)
    assert first.status_code == 201, first.content
    assert first["Idempotency-Status"] == "successfully_stored"
    again = post(staff, body, key)
    assert again.status_code == 201
    assert again["Idempotency-Status"] == "retrieved_idempotent_response"
    assert again.json() == first.json()
    assert len(gateway.charges) == 1 and Charge.objects.count() == 1


def test_the_same_key_with_another_body_is_a_409_that_says_so(staff, gateway, token):
    key = "checkout-42"
    assert post(staff, {"transaction_token_id": token, "amount": 1200, "currency": "JPY"}, key)
    other = post(staff, {"transaction_token_id": token, "amount": 9999, "currency": "JPY"}, key)
    body = assert_error(other, 409, "idempotency_key_reused")
    assert "different request" in body["message"]
    assert len(gateway.charges) == 1


def test_a_refusal_is_kept_and_replayed_too(staff, gateway, token):
    gateway.add_fault("POST", r"^/charges$", action="status", status=400, count=1)
    body = {"transaction_token_id": token, "amount": 1200, "currency": "JPY"}
    first = post(staff, body, "k-400")
    assert_error(first, 400, "gateway_validation_error")
    again = post(staff, body, "k-400")  # the fault is spent: only a replay can answer 400
    assert (
        again.status_code == 400 and again["Idempotency-Status"] == "retrieved_idempotent_response"
    )
    assert len(gateway.charges) == 0


def test_after_an_unknown_outcome_the_same_key_checks_and_never_charges_twice(
    staff, gateway, token
):
    body = {"transaction_token_id": token, "amount": 1200, "currency": "JPY"}
    gateway.add_fault("POST", r"^/charges$", action="drop_after")  # made, answer lost, always
    gateway.add_fault("GET", r"^/charges$", action="status", status=503)  # and no lookup
    first = post(staff, body, "k-lost")
    assert_error(first, 503, "charge_outcome_unknown")
    assert len(gateway.charges) == 1
    assert not ApiIdempotencyRecord.objects.exists()  # a 5xx is not kept: retry may run
    gateway.clear_faults()
    again = post(staff, body, "k-lost")  # the client retries, as the 503 says
    assert again.status_code == 201, again.content
    assert again.json()["id"] in gateway.charges
    assert len(gateway.charges) == 1
    assert ChargeRequest.objects.get().state == "succeeded"


def test_a_key_still_running_is_a_409_with_retry_after(staff, gateway, token):
    body = {"transaction_token_id": token, "amount": 1200, "currency": "JPY"}
    assert post(staff, body, "k-run").status_code == 201
    # The same key's first request still running (a slow create in another process):
    ApiIdempotencyRecord.objects.update(status_code=None, response=None)
    ChargeRequest.objects.update(state="unknown")  # sent, not answered yet
    busy = post(staff, body, "k-run")
    assert_error(busy, 409, "idempotency_key_in_progress")
    assert busy["Retry-After"] == "1"
    # ... unless it has been running for longer than any request lives: taken over.
    ApiIdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(minutes=10))
    taken = post(staff, body, "k-run")
    assert taken.status_code == 201 and len(gateway.charges) == 1


def test_a_key_whose_create_has_ended_is_not_blocked_by_a_request_that_died(staff, gateway, token):
    """A first request that died with its record in progress: once its create has ended
    (here answered; ``paycharge_recover`` settles it the same way), the same key and body
    answer that charge at once, not 409 for minutes; another body is still refused."""
    body = {"transaction_token_id": token, "amount": 1200, "currency": "JPY"}
    first = post(staff, body, "k-died")
    ApiIdempotencyRecord.objects.update(status_code=None, response=None)
    assert ChargeRequest.objects.get().state == "succeeded"
    other = post(staff, {**body, "amount": 1300}, "k-died")
    assert_error(other, 409, "idempotency_key_reused")
    again = post(staff, body, "k-died")
    assert again.status_code == 201, again.content
    assert again.json()["id"] == first.json()["id"] and len(gateway.charges) == 1
    assert again["Idempotency-Status"] == "successfully_stored"


def test_keys_are_per_caller(settings, gateway, token, db):
    from django.contrib.auth.models import User

    settings.PAYCHARGE = {**settings.PAYCHARGE, **STOREFRONT}
    alice, bob = APIClient(), APIClient()
    alice.force_login(User.objects.create(username="alice"))
    bob.force_login(User.objects.create(username="bob"))
    other_token = gateway.create_transaction_token("card")["id"]
    a = post(alice, {"transaction_token_id": token, "reference": "A-1"}, "same-key")
    b = post(bob, {"transaction_token_id": other_token, "reference": "A-1"}, "same-key")
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"] and len(gateway.charges) == 2


def test_an_anonymous_replay_needs_the_whole_first_request(settings, gateway, token):
    settings.PAYCHARGE = {**settings.PAYCHARGE, **STOREFRONT}
    body = {"transaction_token_id": token, "reference": "A-1"}
    first = post(APIClient(), body, "anon-key")
    assert first.status_code == 201
    # Someone else who knows the key but not the token learns nothing but "reused".
    guess = {"transaction_token_id": str(uuid.uuid4()), "reference": "A-1"}
    assert_error(post(APIClient(), guess, "anon-key"), 409, "idempotency_key_reused")


def test_without_the_header_each_post_is_a_new_request(staff, gateway):
    for _ in range(2):
        token = gateway.create_transaction_token("card")["id"]
        response = post(staff, {"transaction_token_id": token, "amount": 1, "currency": "JPY"})
        assert response.status_code == 201
        assert "Idempotency-Status" not in response
    assert len(gateway.charges) == 2 and not ApiIdempotencyRecord.objects.exists()


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "ключ"])
def test_a_malformed_key_is_a_400(staff, gateway, token, key):
    body = {"transaction_token_id": token, "amount": 1, "currency": "JPY"}
    assert_error(post(staff, body, key), 400, "validation_error", "Idempotency-Key")
    assert len(gateway.charges) == 0


def test_expired_answers_are_purged_as_new_keys_arrive(staff, gateway, token):
    for n in range(3):
        ApiIdempotencyRecord.objects.create(scope="x", key_digest=str(n), fingerprint="f")
    ApiIdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(days=2))
    body = {"transaction_token_id": token, "amount": 1, "currency": "JPY"}
    assert post(staff, body, "fresh").status_code == 201
    kept = ApiIdempotencyRecord.objects.get()  # the three expired ones are gone
    assert kept.scope.startswith("charges.create:user-") and kept.status_code == 201
    assert "fresh" not in kept.key_digest  # only a digest of the key is stored
