"""3-D Secure end to end without a browser: charge, issuer token, challenge, return view."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from django_paycharge import services, signals
from django_paycharge.exceptions import ChargeStateError
from django_paycharge.models import Charge, IssuerToken
from django_paycharge.testing import CARD_SUCCESS, CARD_THREE_DS
from tests.waiting import GUARD

pytestmark = pytest.mark.django_db

URL = "/payments/return/3ds/"


def three_ds_charge(fake_gateway, number=CARD_THREE_DS, mode=None, **fields):
    token = fake_gateway.create_transaction_token("card", card_number=number)["id"]
    charge = services.create_charge(
        transaction_token_id=token,
        amount=3000,
        currency="JPY",
        metadata={"order": "12"},
        three_ds_redirect_endpoint=f"https://testserver{URL}",
        three_ds_mode=mode,
        **fields,
    )
    return services.wait_for_charge(charge, timeout=GUARD)


def answer_challenge(fake_gateway, token: IssuerToken, result: str) -> str:
    """What the customer's browser does: POST the payload, answer; returns the redirect."""
    app = fake_gateway.app
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert token.payload is not None
    body = "&".join(f"{k}={v}" for k, v in token.payload.items())
    path = urlsplit(token.issuer_token).path
    page = app.handle("POST", path, "", form, body.encode())
    assert page.status == 200 and b"Confirm your payment" in page.body
    answer = app.handle("POST", path + "/answer", "", form, f"{body}&result={result}".encode())
    assert answer.status == 303
    return answer.headers["Location"]


def test_the_customer_authenticates_and_comes_back_to_a_paid_charge(
    client, fake_gateway, settings, django_capture_on_commit_callbacks
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "RETURN_URL": "/done/{charge_id}/"}
    charge = three_ds_charge(fake_gateway)
    assert charge.status == "awaiting" and services.known_payment_type(charge) == "card"
    assert charge.three_ds == {"redirect_endpoint": f"https://testserver{URL}", "mode": "normal"}
    token = services.fetch_issuer_token(charge)  # a card's issuer token is its 3-D Secure one
    assert (token.payment_type, token.call_method) == ("card", "http_post")
    location = answer_challenge(fake_gateway, token, "pass")
    assert location.startswith(f"https://testserver{URL}?serviceChargeId={charge.gateway_id}")
    returned = []
    signals.charge_returned.connect(lambda **kw: returned.append(kw["three_ds"]), weak=False)
    try:
        # Signals are sent after the commit: run the callbacks this test's transaction holds.
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get(location.removeprefix("https://testserver"))
    finally:
        signals.charge_returned.receivers.clear()
    assert response.status_code == 302 and response["Location"] == f"/done/{charge.gateway_id}/"
    assert returned == [True]
    charge.refresh_from_db()
    assert charge.status == "successful" and charge.charged_amount == 3000


def test_a_failed_authentication_comes_back_failed(client, fake_gateway):
    charge = three_ds_charge(fake_gateway)
    location = answer_challenge(fake_gateway, services.fetch_issuer_token(charge), "fail")
    assert client.get(location.removeprefix("https://testserver")).status_code == 302
    charge.refresh_from_db()
    assert charge.status == "failed" and charge.error["code"] == 358


def test_the_return_trusts_nothing_but_the_charge_id(client, fake_gateway):
    charge = three_ds_charge(fake_gateway)
    query = {
        "serviceChargeId": str(charge.gateway_id),
        "serviceTokenId": str(charge.transaction_token_id),
        "status": "successful",
    }
    assert client.get(URL, query).status_code == 302
    assert Charge.objects.get(pk=charge.pk).status == "awaiting"  # as the gateway says
    assert client.get(URL, {**query, "serviceTokenId": str(charge.gateway_id)}).status_code == 404
    assert client.get(URL, {"serviceChargeId": "not-a-uuid"}).status_code == 404


@pytest.mark.parametrize(("number", "mode"), [(CARD_SUCCESS, None), (CARD_THREE_DS, "skip")])
def test_without_a_challenge_there_is_no_3ds_token(fake_gateway, number, mode):
    charge = three_ds_charge(fake_gateway, number, mode)
    assert charge.status == "successful"
    with pytest.raises(ChargeStateError) as info:
        services.fetch_three_ds_issuer_token(charge)
    assert info.value.status == "successful"


def test_an_authorization_after_3ds_can_then_be_captured(fake_gateway):
    charge = three_ds_charge(fake_gateway, mode="force", capture=False)
    answer_challenge(fake_gateway, services.fetch_issuer_token(charge), "pass")
    captured = services.capture_charge(charge)
    assert captured.status == "successful"


def test_a_subscriptions_first_payment_goes_through_the_same_3ds_path(
    client, fake_gateway, settings, django_capture_on_commit_callbacks
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "RETURN_URL": "/done/{charge_id}/"}
    token = fake_gateway.create_transaction_token(
        "card", type="subscription", card_number=CARD_THREE_DS
    )["id"]
    subscription = services.create_subscription(
        transaction_token_id=token,
        amount=1200,
        currency="JPY",
        period="monthly",
        payment_type="card",
        three_ds_redirect_endpoint=f"https://testserver{URL}",
    )
    first = services.subscription_first_charge(subscription, timeout=GUARD)
    assert first is not None and first.status == "awaiting"
    assert first.subscription_id == subscription.gateway_id
    location = answer_challenge(fake_gateway, services.fetch_issuer_token(first), "pass")
    assert location.startswith(f"https://testserver{URL}?serviceChargeId={first.gateway_id}")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(location.removeprefix("https://testserver"))
    assert response.status_code == 302 and response["Location"] == f"/done/{first.gateway_id}/"
    first.refresh_from_db()
    subscription.refresh_from_db()
    # Back on the shop's page the subscription shows active, whatever its webhook does.
    assert first.status == "successful" and subscription.status == "current"
