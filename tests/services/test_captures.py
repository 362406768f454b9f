"""capture_charge, cancel_charge and update_charge_metadata against the fake's rules."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from django_paycharge import services
from django_paycharge.exceptions import (
    ActionOutcomeUnknownError,
    ChargeBusyError,
    ChargeStateError,
    InvalidParametersError,
)
from django_paycharge.models import Cancel, Charge, ChargeActionRequest
from django_paycharge.services.lifecycle.captures import CAPTURE
from django_paycharge.services.lifecycle.requests import open_request
from django_paycharge.testing.provider import return_url
from tests.waiting import fake_gateway_report, wait_until

from .test_lifecycle_races import run_together

pytestmark = pytest.mark.django_db


@pytest.fixture
def authorized(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    return services.create_charge(
        transaction_token_id=token, amount=1000, currency="JPY", capture=False
    )


def posts(gateway, suffix):
    return [r for r in gateway.requests_log if r["method"] == "POST" and r["path"].endswith(suffix)]


def test_capture_charges_the_whole_authorization_once(
    fake_gateway, authorized, caught, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        charge = services.capture_charge(authorized, requested_by="bob")
    assert charge.status == "successful" and charge.charged_amount == 1000
    [post] = posts(fake_gateway, "/capture")
    assert post["body"] == ""  # no body: everything authorized
    request = ChargeActionRequest.objects.get()
    assert (request.kind, request.state, request.requested_by) == ("capture", "succeeded", "bob")
    assert [(s["charge"].pk, s["amount"]) for s in caught["charge_captured"]] == [
        (authorized.pk, None)
    ]
    # Captured twice: the second is refused after a fresh read, nothing sent.
    with pytest.raises(ChargeStateError) as info:
        services.capture_charge(authorized)
    assert info.value.status == "successful"
    assert len(posts(fake_gateway, "/capture")) == 1


def test_a_partial_capture_charges_that_amount(fake_gateway, authorized):
    charge = services.capture_charge(authorized, amount=600)
    assert charge.charged_amount == 600
    [post] = posts(fake_gateway, "/capture")
    assert post["body"] == '{"amount":600,"currency":"JPY"}'
    with pytest.raises(InvalidParametersError):
        services.capture_charge(charge, amount=0)


def test_more_than_the_authorized_amount_is_refused_locally(fake_gateway, authorized):
    with pytest.raises(InvalidParametersError) as info:
        services.capture_charge(authorized, amount=1001)
    assert info.value.errors[0].field == "amount"
    assert posts(fake_gateway, "/capture") == []


def test_capture_of_an_expired_authorization_fails_the_charge(fake_gateway, authorized):
    fake_gateway.request("POST", f"/_fake/charges/{authorized.gateway_id}/expire_authorization")
    with pytest.raises(ChargeStateError) as info:
        services.capture_charge(authorized)
    assert info.value.status == "failed"
    assert "authorization expired" in str(info.value)
    assert (Charge.objects.get(pk=authorized.pk).error or {}).get("code") == 313
    request = ChargeActionRequest.objects.get()
    assert request.state == "failed" and request.error is not None
    assert request.error["type"] == "ChargeStateError"


def test_capture_of_an_authorization_the_gateway_already_canceled(fake_gateway, authorized):
    fake_gateway.expire(str(authorized.gateway_id))  # the gateway let it lapse: canceled
    with pytest.raises(ChargeStateError) as info:
        services.capture_charge(authorized)
    assert info.value.status == "canceled"
    assert posts(fake_gateway, "/capture") == []


def test_a_capture_left_open_by_a_crash_is_refused_when_the_gateway_canceled_it(
    fake_gateway, authorized
):
    # Committed, then the process died before sending; meanwhile the authorization lapsed.
    fresh = services.refresh_charge(authorized.gateway_id)
    request, _new = open_request(CAPTURE, fresh, {}, None, "bob")
    fake_gateway.expire(str(authorized.gateway_id))
    result = services.recover_requests(older_than=timedelta(0))
    assert (result.failed, result.settled, result.still_pending) == (1, 0, 0)
    request.refresh_from_db()
    assert request.state == "failed" and request.error is not None
    assert request.error["type"] == "ChargeStateError"
    assert request.error["charge_status"] == "canceled"  # told in words after a read
    assert len(posts(fake_gateway, "/capture")) == 1


def test_a_slow_capture_is_asked_again_with_its_key_and_captures_once(
    fake_gateway, authorized, settings
):
    """Slower than the read time-out: the retries meet IDEMPOTENCY_KEY_IN_PROGRESS."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TIMEOUT": (1.0, 0.05), "CREATE_SETTLE_SECONDS": 5}
    fake_gateway.add_fault("POST", r"/capture$", action="latency", latency=0.3, count=1)
    charge = services.capture_charge(authorized)
    assert charge.status == "successful"
    sent = posts(fake_gateway, "/capture")
    assert len(sent) >= 2 and len({p["headers"]["idempotency-key"] for p in sent}) == 1
    assert ChargeActionRequest.objects.get().state == "succeeded"


def test_a_capture_never_answered_is_unknown_not_refused_then_found(
    fake_gateway, authorized, caught, django_capture_on_commit_callbacks, settings
):
    """Slower than the whole settle budget: abandoned, reported unknown; its late success
    is found by the recovery's reads and the capture is never sent again."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TIMEOUT": (1.0, 0.05)}
    fake_gateway.add_fault("POST", r"/capture$", action="latency", latency=0.8, count=1)
    with pytest.raises(ActionOutcomeUnknownError) as info:
        services.capture_charge(authorized)
    assert info.value.outcome == "unknown" and info.value.kind == "capture"
    assert "do not capture again" in str(info.value)
    request = ChargeActionRequest.objects.get()
    assert request.state == "abandoned"
    attempts = len(posts(fake_gateway, "/capture"))
    wait_until(
        lambda: fake_gateway.charges[str(authorized.gateway_id)]["status"] == "successful",
        "the slow capture to finish at the gateway",
        every=0.02,
        diagnose=lambda: fake_gateway_report(fake_gateway),
    )
    with django_capture_on_commit_callbacks(execute=True):
        result = services.recover_requests(older_than=timedelta(0))
    assert result.found == 1 and result.by_kind["capture"]["found"] == 1
    request.refresh_from_db()
    assert request.state == "succeeded"
    assert len(posts(fake_gateway, "/capture")) == attempts  # looked for, never sent again
    assert [s["charge"].pk for s in caught["charge_captured"]] == [authorized.pk]


def test_already_captured_on_a_resend_is_settled_by_reading(fake_gateway, authorized, caplog):
    """The answer is lost and the gateway forgot the key: the resend is refused as
    ALREADY_CAPTURED, and a read shows the capture happened: success, not a refusal."""
    fake_gateway.add_fault("POST", r"/capture$", action="drop_after", count=1)
    forget = fake_gateway.forget_idempotency_keys
    fake_gateway.add_fault("POST", r"/capture$", action="status", status=503, count=1)
    original = fake_gateway.state.faults.pick

    def pick(method, path):  # the key expires between the first answer and the resend
        fault = original(method, path)
        if fault is not None and fault.status == 503:
            forget()
            return None
        return fault

    fake_gateway.state.faults.pick = pick
    charge = services.capture_charge(authorized, amount=700)
    assert charge.status == "successful" and charge.charged_amount == 700
    assert ChargeActionRequest.objects.get().state == "succeeded"
    assert len(posts(fake_gateway, "/capture")) == 2
    answers = [r.getMessage() for r in caplog.records if "/capture ->" in r.getMessage()]
    assert "-> 400" in answers[-1]  # the resend was refused, and the read settled it


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_captures_of_one_charge_at_once_send_one(fake_gateway_server, settings):
    token = fake_gateway_server.create_transaction_token("card")["id"]
    charge = services.create_charge(
        transaction_token_id=token, amount=900, currency="JPY", capture=False
    )
    fake_gateway_server.add_fault("POST", r"/capture$", action="latency", latency=0.3)
    results = run_together(
        lambda: services.capture_charge(charge), lambda: services.capture_charge(charge)
    )
    done = [r for r in results if isinstance(r, Charge)]
    refused = [r for r in results if isinstance(r, ChargeBusyError | ChargeStateError)]
    assert len(done) == 1 and len(refused) == 1, results
    assert len(posts(fake_gateway_server, "/capture")) == 1


def test_cancel_an_authorization_then_it_cannot_be_captured(
    fake_gateway, authorized, caught, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        cancel = services.cancel_charge(authorized, metadata={"why": "out of stock"})
    assert cancel.status == "successful" and cancel.metadata == {"why": "out of stock"}
    authorized.refresh_from_db()
    assert authorized.status == "canceled"
    assert [s["cancel"].pk for s in caught["charge_canceled"]] == [cancel.pk]
    with pytest.raises(ChargeStateError) as info:
        services.capture_charge(authorized)
    assert info.value.status == "canceled"
    assert fake_gateway.charges[str(authorized.gateway_id)]["status"] == "canceled"
    with pytest.raises(ChargeStateError):
        services.cancel_charge(authorized)
    assert Cancel.objects.count() == 1


def test_a_refunded_card_payment_cannot_be_canceled(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=800, currency="JPY")
    services.refund_charge(charge, amount=100)
    with pytest.raises(ChargeStateError) as info:
        services.cancel_charge(charge)
    assert info.value.status == "successful"
    assert ChargeActionRequest.objects.get(kind="cancel").state == "failed"
    assert fake_gateway.charges[str(charge.gateway_id)]["status"] == "successful"


def test_the_same_cancel_key_twice_sends_one_cancel(fake_gateway, authorized):
    key = uuid.uuid4()
    first = services.cancel_charge(authorized, idempotency_key=key)
    again = services.cancel_charge(authorized, idempotency_key=key)
    assert first.pk == again.pk
    assert len(posts(fake_gateway, "/cancels")) == 1


def test_metadata_update_changes_the_mirror_not_the_return_query(fake_gateway):
    token = fake_gateway.create_transaction_token("online")["id"]
    charge = services.create_charge(
        transaction_token_id=token,
        amount=500,
        currency="JPY",
        metadata={"order": "7"},
        redirect_endpoint="https://shop.example/back/",
    )
    updated = services.update_charge_metadata(charge, {"note": "gift", "order": "7b"})
    assert updated.pk == charge.pk
    assert updated.metadata == {"order": "7b", "note": "gift"}
    record = fake_gateway.state.charges[str(charge.gateway_id)]
    assert "order=7&" in return_url(record) + "&" and "note" not in return_url(record)
    with pytest.raises(InvalidParametersError):
        services.update_charge_metadata(charge, {"bad": ["list"]})
