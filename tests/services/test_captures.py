"""capture_charge, cancel_charge and update_charge_metadata against the fake's rules."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from django_paycharge import services
from django_paycharge.exceptions import ChargeStateError, InvalidParametersError
from django_paycharge.models import Cancel, Charge, ChargeActionRequest
from django_paycharge.testing.provider import return_url

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
    assert Charge.objects.get(pk=authorized.pk).error["code"] == 313
    request = ChargeActionRequest.objects.get()
    assert request.state == "failed" and request.error["type"] == "ChargeStateError"


def test_capture_of_an_authorization_the_gateway_already_canceled(fake_gateway, authorized):
    fake_gateway.expire(str(authorized.gateway_id))  # the gateway let it lapse: canceled
    with pytest.raises(ChargeStateError) as info:
        services.capture_charge(authorized)
    assert info.value.status == "canceled"
    assert posts(fake_gateway, "/capture") == []


def test_a_capture_pending_when_the_gateway_canceled_it_is_settled_as_failed(
    fake_gateway, authorized, settings
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    fake_gateway.add_fault("POST", r"/capture$", action="drop_before", count=1)
    with pytest.raises(Exception):  # noqa: B017 - the network error of the dropped request
        services.capture_charge(authorized)
    fake_gateway.expire(str(authorized.gateway_id))
    counts = services.recover_action_requests(older_than=timedelta(0))
    assert counts == {"settled": 0, "failed": 1, "still_pending": 0}
    request = ChargeActionRequest.objects.get()
    assert request.state == "failed" and request.error["http_status"] == 409


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
