"""Capture, cancel and refund endpoints: staff with the action's permission, Idempotency-Key."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from django_paycharge import services
from django_paycharge.models import ApiIdempotencyRecord, Cancel, ChargeActionRequest, Refund
from django_paycharge.services.lifecycle.refunds import REFUND
from django_paycharge.services.lifecycle.requests import open_request
from tests.waiting import fake_gateway_report, wait_until

from .conftest import API, _user, assert_error, gateway_charge, mirror_charges

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(db: Any) -> APIClient:
    """Staff holding the capture, cancel and refund permissions."""
    client = APIClient()
    perms = ("capture_charge", "cancel_charge", "refund_charge")
    client.force_login(_user("operator", staff=True, perms=perms))
    return client


def url(charge: Any, what: str) -> str:
    return f"{API}/charges/{charge.gateway_id}/{what}/"


def test_refund_with_an_idempotency_key_refunds_once(gateway, operator):
    charge = gateway_charge(gateway)
    body = {"amount": 500, "reason": "customer_request", "message": "wrong size"}
    headers = {"HTTP_IDEMPOTENCY_KEY": "order-9-refund-1"}
    first = operator.post(url(charge, "refunds"), body, format="json", **headers)
    again = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert first["Idempotency-Status"] == "successfully_stored"
    assert again["Idempotency-Status"] == "retrieved_idempotent_response"
    data = first.json()
    assert (data["amount"], data["currency"], data["reason"]) == (500, "JPY", "customer_request")
    assert data["charge_id"] == str(charge.gateway_id) and data["status"] == "pending"
    assert len(gateway.state.refunds) == 1
    request = ChargeActionRequest.objects.get()
    # The service's key is the header's, scoped to this caller and action (as for creates).
    assert request.idempotency_key.startswith("api-") and request.requested_by == "operator"
    other = operator.post(url(charge, "refunds"), {"amount": 1}, format="json", **headers)
    assert_error(other, 409, "idempotency_key_reused")
    listed = operator.get(url(charge, "refunds"))
    assert [r["id"] for r in listed.json()] == [data["id"]]
    detail = operator.get(f"{API}/charges/{charge.gateway_id}/").json()
    assert detail["refunded_amount"] == 0  # pending: counted once it ends
    services.sync_charge_children(charge)  # its end, as the refund_finished webhook tells it
    detail = operator.get(f"{API}/charges/{charge.gateway_id}/").json()
    assert detail["refunded_amount"] == 500


def test_without_a_body_everything_left_is_refunded(gateway, operator):
    charge = gateway_charge(gateway)
    assert operator.post(url(charge, "refunds"), format="json").json()["amount"] == 1200
    body = assert_error(operator.post(url(charge, "refunds"), format="json"), 409, "charge_status")
    assert "Nothing is left" in body["message"]


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"amount": 99_999}, 400, "validation_error", "amount"),
        ({"amount": 10, "currency": "USD"}, 400, "validation_error", "currency"),
        ({"amount": 10, "reason": "chargeback"}, 400, "validation_error", "reason"),
        ({"amout": 10}, 400, "validation_error", "amout"),
    ],
)
def test_bad_refunds_are_refused(gateway, operator, body, status, code, field):
    charge = gateway_charge(gateway)
    assert_error(operator.post(url(charge, "refunds"), body, format="json"), status, code, field)
    assert Refund.objects.count() == 0


def test_a_malformed_idempotency_key_is_refused(gateway, operator):
    charge = gateway_charge(gateway)
    response = operator.post(
        url(charge, "refunds"), {}, format="json", HTTP_IDEMPOTENCY_KEY="has spaces"
    )
    assert_error(response, 400, "validation_error", "Idempotency-Key")
    assert ChargeActionRequest.objects.count() == 0


def test_capture_then_cancel_and_the_conflicts(gateway, operator):
    token = gateway.create_transaction_token("card")["id"]
    authorized = services.create_charge(
        transaction_token_id=token, amount=800, currency="JPY", capture=False
    )
    captured = operator.post(url(authorized, "capture"), {"amount": 300}, format="json")
    assert captured.status_code == 200
    assert (captured.json()["status"], captured.json()["charged_amount"]) == ("successful", 300)
    again = operator.post(url(authorized, "capture"), format="json")
    assert assert_error(again, 409, "charge_status")["status"] == "successful"

    other = services.create_charge(
        transaction_token_id=token, amount=800, currency="JPY", capture=False
    )
    canceled = operator.post(url(other, "cancels"), {"metadata": {"why": "stock"}}, format="json")
    assert canceled.status_code == 201 and canceled.json()["status"] == "successful"
    assert [c["id"] for c in operator.get(url(other, "cancels")).json()] == [
        str(Cancel.objects.get().gateway_id)
    ]
    late = operator.post(url(other, "capture"), format="json")
    assert assert_error(late, 409, "charge_status")["status"] == "canceled"


def test_staff_without_the_permission_may_list_but_not_act(gateway, staff):
    charge = gateway_charge(gateway)
    for what in ("refunds", "cancels", "capture"):
        assert_error(staff.post(url(charge, what), format="json"), 403, "permission_denied")
    assert staff.get(url(charge, "refunds")).status_code == 200
    assert ChargeActionRequest.objects.count() == 0


@pytest.mark.parametrize("who", ["anon", "customer"])
def test_customers_may_do_nothing(gateway, request, who):
    charge = gateway_charge(gateway)
    client = request.getfixturevalue(who)
    for what in ("refunds", "cancels"):
        assert client.post(url(charge, what), format="json").status_code in (401, 403)
        assert client.get(url(charge, what)).status_code in (401, 403)
    assert len(gateway.requests_log) == 1  # the charge's creation only (its POST)


def test_the_charge_list_shows_refunded_amounts_in_one_query(
    operator, django_assert_max_num_queries
):
    charges = mirror_charges(3)
    for charge in charges:
        when = charge.synced_at
        charge.refunds.create(
            gateway_id=charge.gateway_id, amount=40, status="successful", synced_at=when,
            first_seen_at=when,
        )  # fmt: skip
    services.recount_refunds_total()  # refunds written here, not by the app: counted again
    with django_assert_max_num_queries(6):  # session, user, page: never one per charge
        items = operator.get(f"{API}/charges/").json()["items"]
    assert [c["refunded_amount"] for c in items] == [40, 40, 40]


def test_a_lost_answer_is_asked_again_and_answered_once(gateway, operator):
    charge = gateway_charge(gateway)
    gateway.add_fault("POST", r"/refunds$", action="drop_after", count=1)
    headers = {"HTTP_IDEMPOTENCY_KEY": "order-9-refund-2"}
    first = operator.post(url(charge, "refunds"), {"amount": 400}, format="json", **headers)
    assert first.status_code == 201 and first["Idempotency-Status"] == "successfully_stored"
    assert len(gateway.state.refunds) == 1 and Refund.objects.count() == 1
    assert ChargeActionRequest.objects.get().state == "succeeded"


def test_an_unknown_outcome_is_retryable_and_the_same_key_later_answers_it(
    gateway, operator, settings
):
    """Not a refusal and not kept: 503 with Retry-After; the same key, sent again once the
    gateway has finished, returns the refund (found by a read, never sent again)."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TIMEOUT": (1.0, 0.05)}
    charge = gateway_charge(gateway)
    gateway.add_fault("POST", r"/refunds$", action="latency", latency=0.8, count=1)
    headers = {"HTTP_IDEMPOTENCY_KEY": "order-9-refund-3"}
    body = {"amount": 400}
    slow = operator.post(url(charge, "refunds"), body, format="json", **headers)
    data = assert_error(slow, 503, "outcome_unknown")
    assert (data["outcome"], data["kind"]) == ("unknown", "refund")
    assert "do not refund again" in data["message"] and slow["Retry-After"]
    assert "Idempotency-Status" not in slow
    assert not ApiIdempotencyRecord.objects.exclude(status_code=None).exists()
    charge.refresh_from_db()
    assert services.refundable_amount(charge) == 800  # the 400 stays reserved
    posts = len([r for r in gateway.requests_log if r["method"] == "POST"])
    wait_until(
        lambda: gateway.state.refunds,
        "the slow refund to finish at the gateway",
        every=0.02,
        diagnose=lambda: fake_gateway_report(gateway),
    )
    again = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert again.status_code == 201 and again.json()["amount"] == 400
    assert again["Idempotency-Status"] == "successfully_stored"
    assert len([r for r in gateway.requests_log if r["method"] == "POST"]) == posts
    assert len(gateway.state.refunds) == 1 and Refund.objects.count() == 1
    replayed = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert replayed.json() == again.json()


def test_a_charge_busy_with_another_action_is_not_kept_for_the_key(gateway, operator):
    charge = gateway_charge(gateway)
    fresh = services.refresh_charge(charge.gateway_id)
    open_request(REFUND, fresh, {"amount": 100}, None, "someone")  # being sent elsewhere
    headers = {"HTTP_IDEMPOTENCY_KEY": "refund-while-busy"}
    busy = operator.post(url(charge, "refunds"), {"amount": 200}, format="json", **headers)
    assert_error(busy, 409, "charge_busy")
    assert busy["Retry-After"] and "Idempotency-Status" not in busy
    ChargeActionRequest.objects.update(state="failed")  # the other one ended
    later = operator.post(url(charge, "refunds"), {"amount": 200}, format="json", **headers)
    assert later.status_code == 201 and later.json()["amount"] == 200


def test_the_same_key_from_another_operator_is_another_request(gateway, operator):
    charge = gateway_charge(gateway)
    other = APIClient()
    perms = ("refund_charge",)
    other.force_login(_user("other-operator", staff=True, perms=perms))
    headers: dict[str, Any] = {"HTTP_IDEMPOTENCY_KEY": "refund-1"}
    for client in (operator, other):
        answer = client.post(url(charge, "refunds"), {"amount": 100}, format="json", **headers)
        assert answer.status_code == 201 and answer["Idempotency-Status"] == "successfully_stored"
    assert len(gateway.state.refunds) == 2 and ChargeActionRequest.objects.count() == 2


def test_an_action_still_running_answers_409_in_progress(gateway, operator):
    charge = gateway_charge(gateway)
    headers = {"HTTP_IDEMPOTENCY_KEY": "cancel-while-running"}
    # As if a first request with this key and body were still running (no answer kept yet,
    # its request sent and not answered yet).
    first = operator.post(url(charge, "cancels"), {}, format="json", **headers)
    ApiIdempotencyRecord.objects.update(status_code=None, response=None)
    ChargeActionRequest.objects.update(state="unknown")
    running = operator.post(url(charge, "cancels"), {}, format="json", **headers)
    assert_error(running, 409, "idempotency_key_in_progress")
    # Once that request has ended (answered, or settled by recovery), the key is not blocked.
    ChargeActionRequest.objects.update(state="succeeded")
    ended = operator.post(url(charge, "cancels"), {}, format="json", **headers)
    assert ended.status_code == 201 and ended.json() == first.json()
    assert first.status_code == 201 and len(gateway.state.cancels) == 1


def test_a_refused_body_echoing_a_nul_is_kept_and_replayed(gateway, operator):
    """The 400 names the caller's metadata key, NUL included: PostgreSQL cannot store NUL."""
    charge = gateway_charge(gateway)
    body = {"metadata": {"size\x00": {"nested": 1}}}
    headers = {"HTTP_IDEMPOTENCY_KEY": "refund-nul"}
    first = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert_error(first, 400, "validation_error")
    assert first["Idempotency-Status"] == "successfully_stored"
    again = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert again.status_code == 400
    assert again["Idempotency-Status"] == "retrieved_idempotent_response"
    assert again.json()["errors"][0]["field"] == "metadata.size\ufffd"
    assert not gateway.state.refunds


def test_after_a_crash_mid_refund_and_its_recovery_the_same_key_answers_the_refund(
    gateway, operator, monkeypatch
):
    """The process dies after the gateway refunded, before anything was answered: the key's
    record is left in progress. Once ``paycharge_recover`` has settled the request, the same
    key and body answer the refund (never sent again), not 409 ``idempotency_key_in_progress``."""
    charge = gateway_charge(gateway)
    headers = {"HTTP_IDEMPOTENCY_KEY": "order-9-refund-crash"}
    body = {"amount": 400}

    def the_process_dies(*args: Any, **kwargs: Any) -> None:
        raise SystemExit("the worker was killed")

    with monkeypatch.context() as patched:
        patched.setattr(
            "django_paycharge.services.lifecycle.refunds.store_refund", the_process_dies
        )
        with pytest.raises(SystemExit):
            operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert len(gateway.state.refunds) == 1 and not Refund.objects.exists()
    assert ApiIdempotencyRecord.objects.get().status_code is None  # left in progress
    assert ChargeActionRequest.objects.get().state in ChargeActionRequest.OPEN_STATES
    services.recover_requests(older_than=timedelta(0))
    assert ChargeActionRequest.objects.get().state == "succeeded"
    posts = len([r for r in gateway.requests_log if r["method"] == "POST"])
    again = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert again.status_code == 201, again.content
    assert again.json()["amount"] == 400 and again.json()["id"] in gateway.state.refunds
    assert len([r for r in gateway.requests_log if r["method"] == "POST"]) == posts
    assert len(gateway.state.refunds) == 1 and Refund.objects.count() == 1
    replayed = operator.post(url(charge, "refunds"), body, format="json", **headers)
    assert replayed.json() == again.json()
    assert replayed["Idempotency-Status"] == "retrieved_idempotent_response"
