"""A create's outcome is never guessed: asked again with its key, looked for, or abandoned."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from django_paycharge import services
from django_paycharge.exceptions import (
    BadRequestError,
    ChargeOutcomeUnknownError,
    ChargeRequestAbandonedError,
)
from django_paycharge.models import Charge, ChargeRequest
from tests.waiting import fake_gateway_report, join, wait_until

pytestmark = pytest.mark.django_db

IN_PROGRESS = "IDEMPOTENCY_KEY_IN_PROGRESS"


@pytest.fixture
def card_token(fake_gateway):
    return fake_gateway.create_transaction_token("card")["id"]


def slow_settings(settings, *, read=0.2, settle=3.0):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TIMEOUT": (2.0, read),
        "CREATE_SETTLE_SECONDS": settle,
    }


def posts(fake_gateway):
    return [
        r for r in fake_gateway.requests_log if r["method"] == "POST" and r["path"] == "/charges"
    ]


def wait_for_gateway(fake_gateway, predicate, what):
    """Until ``predicate()``: the fake's slow request runs in a thread of its own."""
    return wait_until(
        predicate, what, every=0.02, diagnose=lambda: fake_gateway_report(fake_gateway)
    )


def test_a_slow_create_beyond_the_read_timeout_is_waited_for_not_failed(
    fake_gateway, card_token, settings
):
    slow_settings(settings)
    fake_gateway.add_fault("POST", r"^/charges$", action="latency", latency=0.8, count=1)
    charge = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="order-1-pay-1"
    )
    assert len(fake_gateway.charges) == 1
    assert str(charge.gateway_id) in fake_gateway.charges
    request = ChargeRequest.objects.get()
    assert request.state == "succeeded" and request.charge_id == charge.pk
    assert request.attempts >= 2  # asked again after the client's own retries
    assert len({r["headers"]["idempotency-key"] for r in posts(fake_gateway)}) == 1


def test_a_create_in_progress_past_the_settle_time_is_abandoned_then_found(
    fake_gateway, card_token, settings
):
    slow_settings(settings, settle=0.1)
    fake_gateway.add_fault("POST", r"^/charges$", action="latency", latency=1.0, count=1)
    with pytest.raises(ChargeOutcomeUnknownError) as info:
        services.create_charge(
            transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="o-2"
        )
    assert info.value.outcome == "unknown" and info.value.idempotency_key == "o-2"
    assert "Do not pay again" in str(info.value)
    request = ChargeRequest.objects.get()
    assert request.state == "abandoned" and request.error is not None
    assert request.error["code"] == IN_PROGRESS and request.error["abandoned"] == "create"
    # The gateway finishes the slow create: recovery never sends, but it finds the charge.
    wait_for_gateway(fake_gateway, lambda: len(fake_gateway.charges) == 1, "the slow create")
    sent = len(posts(fake_gateway))
    result = services.recover_charge_requests(older_than=timedelta(0))
    assert result.found == 1 and len(posts(fake_gateway)) == sent
    request.refresh_from_db()
    assert request.state == "succeeded" and request.charge is not None
    assert str(request.charge.gateway_id) in fake_gateway.charges
    # Asking again with the key returns that charge (a read, never a POST).
    again = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="o-2"
    )
    assert again.pk == request.charge_id and len(posts(fake_gateway)) == sent


@pytest.mark.parametrize(
    "fault",
    [
        {"action": "status", "status": 500},
        {"action": "status", "status": 503},
        {"action": "status", "status": 429, "retry_after": 0},
        {"action": "drop_before"},
    ],
    ids=["500", "503", "429", "reset-before"],
)
def test_every_fault_on_every_ask_abandons_and_nothing_is_charged_later(
    fake_gateway, card_token, settings, fault
):
    fake_gateway.add_fault("POST", r"^/charges$", **fault)
    with pytest.raises(ChargeOutcomeUnknownError):
        services.create_charge(
            transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="o-3"
        )
    request = ChargeRequest.objects.get()
    assert request.state == "abandoned"
    fake_gateway.clear_faults()
    # The customer pays with a new token (a new attempt), then the cron job runs.
    other = fake_gateway.create_transaction_token("card")["id"]
    paid = services.create_charge(
        transaction_token_id=other, amount=100, currency="JPY", idempotency_key="o-3b"
    )
    services.recover_charge_requests(older_than=timedelta(0))
    services.recover_charge_requests(older_than=timedelta(0), max_age=timedelta(seconds=1))
    assert list(fake_gateway.charges) == [str(paid.gateway_id)]
    request.refresh_from_db()
    assert request.state == "abandoned" and request.charge_id is None


def test_a_refusal_is_final_and_recovery_leaves_it(fake_gateway, card_token):
    fake_gateway.add_fault("POST", r"^/charges$", action="status", status=400, count=1)
    with pytest.raises(BadRequestError) as info:
        services.create_charge(transaction_token_id=card_token, amount=100, currency="JPY")
    assert info.value.outcome == "refused"
    assert ChargeRequest.objects.get().state == "failed"
    sent = len(posts(fake_gateway))
    assert services.recover_charge_requests(older_than=timedelta(0)).counts()["failed"] == 0
    assert len(posts(fake_gateway)) == sent


def _stranded(card_token, *, age=timedelta(seconds=60), sent=True):
    """A request a killed process left behind: committed, maybe sent, never answered."""
    params = {"transaction_token_id": card_token, "amount": 700, "currency": "JPY"}
    request = ChargeRequest.objects.create(params=params, caller_key="stranded-1")
    ChargeRequest.objects.filter(pk=request.pk).update(
        created_at=timezone.now() - age,
        state="unknown" if sent else "pending",
        sent_at=timezone.now() - age if sent else None,
        attempts=1 if sent else 0,
    )
    request.refresh_from_db()
    return request


def test_recovery_never_fails_a_request_whose_key_is_still_in_progress(
    fake_gateway, card_token, settings
):
    # Recovery asks once (no client retries): its one POST meets the key in progress
    # however loaded the machine, which the first POST's 3 s leave an order of magnitude for.
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    request = _stranded(card_token)
    body = {"transaction_token_id": card_token, "amount": 700, "currency": "JPY"}
    fake_gateway.add_fault("POST", r"^/charges$", action="latency", latency=3.0, count=1)
    first = threading.Thread(
        target=fake_gateway.request,
        args=("POST", "/charges", body),
        kwargs={"headers": {"Idempotency-Key": str(request.idempotency_key)}},
    )
    first.start()  # the dead process's POST, still being worked on by the gateway
    try:
        wait_for_gateway(fake_gateway, lambda: len(posts(fake_gateway)) == 1, "the dead POST")
        # From the POST's arrival, the recovery below has the gateway's 3 s to find the key
        # in progress: it takes tens of milliseconds, two orders of magnitude less.
        result = services.recover_charge_requests(older_than=timedelta(0))
        assert result.counts() == {
            "settled": 0,
            "failed": 0,
            "still_pending": 1,
            "abandoned": 0,
            "found": 0,
            "left_alone": 0,
        }
        request.refresh_from_db()
        assert request.state == "unknown" and request.error["code"] == IN_PROGRESS
    finally:
        join(first, "the dead process's POST")
    assert services.recover_charge_requests(older_than=timedelta(0)).settled == 1
    request.refresh_from_db()
    assert request.state == "succeeded"
    assert list(fake_gateway.charges) == [str(request.charge.gateway_id)]


def test_past_the_maximum_age_recovery_reads_then_abandons_and_never_sends(
    fake_gateway, card_token
):
    request = _stranded(card_token, age=timedelta(hours=2))
    result = services.recover_charge_requests(older_than=timedelta(0))
    assert result.abandoned == 1 and result.abandoned_keys == ["stranded-1"]
    assert posts(fake_gateway) == []  # looked for (a GET), never sent
    request.refresh_from_db()
    assert request.state == "abandoned" and request.error["abandoned"] == "max_age"


def test_past_the_maximum_age_a_charge_the_gateway_made_is_found_not_abandoned(
    fake_gateway, card_token
):
    request = _stranded(card_token, age=timedelta(hours=2))
    made = fake_gateway.create_charge(card_token, amount=700)  # the dead process's POST
    result = services.recover_charge_requests(older_than=timedelta(0))
    assert result.settled == 1 and result.abandoned == 0
    request.refresh_from_db()
    assert request.state == "succeeded" and str(request.charge.gateway_id) == made["id"]


def test_check_says_unknown_within_the_grace_then_not_charged(fake_gateway, card_token, settings):
    fake_gateway.add_fault("POST", r"^/charges$", action="status", status=503)
    with pytest.raises(ChargeOutcomeUnknownError):
        services.create_charge(
            transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="o-9"
        )
    check = services.check_charge_request("o-9")
    assert check is not None
    assert check.outcome == "unknown" and not check.may_pay_again
    assert services.check_charge_request("no-such-key") is None
    settings.PAYCHARGE = {**settings.PAYCHARGE, "CHARGE_REQUEST_GRACE": 0}
    check = services.check_charge_request("o-9")
    assert check is not None
    assert check.outcome == "not_charged" and check.may_pay_again
    assert check.request.charged_nothing
    # The key is spent: asking with it again says so, and sends nothing.
    fake_gateway.clear_faults()
    with pytest.raises(ChargeRequestAbandonedError) as info:
        services.create_charge(
            transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="o-9"
        )
    assert info.value.outcome == "refused"
    assert len(fake_gateway.charges) == 0


def test_a_double_submit_with_the_same_key_joins_the_first_request(fake_gateway, card_token):
    key = services.idempotency_key_for(ChargeRequest.objects.create(params={}), 1)
    assert key.endswith("-pay-1") and key.startswith("django_paycharge.chargerequest-")
    first = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key=key
    )
    second = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key=key
    )
    assert first.pk == second.pk
    assert len(fake_gateway.charges) == 1 and Charge.objects.count() == 1
    with pytest.raises(ValueError):
        services.idempotency_key_for(ChargeRequest(params={}), 1)


def test_a_declined_charge_makes_a_new_attempt_safe(fake_gateway, card_token):
    charge = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="o-decl"
    )
    check = services.check_charge_request("o-decl")
    assert check is not None and not check.may_pay_again  # it took the money
    Charge.objects.filter(pk=charge.pk).update(status="failed")
    check = services.check_charge_request("o-decl")
    assert check is not None
    assert check.outcome == "charged" and check.may_pay_again
