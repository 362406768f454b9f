from __future__ import annotations

import pytest

from django_paycharge import services
from django_paycharge.access import grant_charge_access
from django_paycharge.models import IssuerToken
from django_paycharge.testing import CARD_THREE_DS

pytestmark = pytest.mark.django_db


def create(fake_gateway, payment_type, **data):
    token = fake_gateway.create_transaction_token(payment_type, **data)["id"]
    return services.create_charge(transaction_token_id=token, amount=2500, currency="JPY")


def grant(client, charge):
    session = client.session
    session["paycharge_charges"] = [str(charge.gateway_id)]
    session.save()


def url(charge):
    return f"/payments/pay/{charge.gateway_id}/"


def test_a_customer_without_access_gets_404(client, fake_gateway):
    charge = create(fake_gateway, "bank_transfer")
    assert client.get(url(charge)).status_code == 404
    assert not IssuerToken.objects.exists()


def test_bank_transfer_page_shows_the_account(client, fake_gateway):
    charge = create(fake_gateway, "bank_transfer")
    grant(client, charge)
    response = client.get(url(charge))
    assert response.status_code == 200
    token = IssuerToken.objects.get(charge=charge)
    assert token.account_number and token.account_number in response.content.decode()
    assert "Please transfer exactly ¥2,500 to this account:" in response.content.decode()
    assert response["Cache-Control"].startswith("max-age=0")


def test_bank_transfer_no_longer_awaiting_renders_the_status(client, fake_gateway):
    charge = create(fake_gateway, "bank_transfer")
    fake_gateway.complete(str(charge.gateway_id))
    grant(client, charge)
    response = client.get(url(charge))
    assert response.status_code == 409
    assert "successful" in response.content.decode()


def test_a_canceled_wallet_payment_is_not_continued(client, fake_gateway):
    charge = create(fake_gateway, "online", brand="paypay", call_method="http_post")
    fake_gateway.expire(str(charge.gateway_id))
    grant(client, charge)
    response = client.get(url(charge))
    assert response.status_code == 409 and response.context["status"] == "canceled"
    assert "/_fake/provider/" not in response.content.decode()
    assert not IssuerToken.objects.exists()


def test_a_card_charge_not_awaiting_3ds_has_nothing_to_continue(client, fake_gateway):
    charge = create(fake_gateway, "card")  # charged at once: no 3-D Secure challenge
    grant(client, charge)
    response = client.get(url(charge))
    assert response.status_code == 409
    assert response.context["status"] == "successful"
    assert not IssuerToken.objects.exists()


def test_a_card_charge_awaiting_3ds_posts_to_the_issuers_challenge(client, fake_gateway):
    token = fake_gateway.create_transaction_token("card", card_number=CARD_THREE_DS)["id"]
    charge = services.create_charge(
        transaction_token_id=token,
        amount=2500,
        currency="JPY",
        three_ds_redirect_endpoint="https://shop.example/payments/return/3ds/",
    )
    grant(client, charge)
    response = client.get(url(charge))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Confirm the payment with your card issuer" in html
    challenge = f"{fake_gateway.base_url}/_fake/provider/{charge.gateway_id}/3ds"
    assert f'action="{challenge}"' in html
    assert 'enctype="application/x-www-form-urlencoded"' in html
    token_row = IssuerToken.objects.get(charge=charge)
    assert (token_row.payment_type, token_row.call_method) == ("card", "http_post")
    assert token_row.raw["content_type"].startswith("application/x-www-form-urlencoded")


def test_gateway_down_renders_a_retry_page(client, fake_gateway, settings):
    charge = create(fake_gateway, "online", brand="paypay", call_method="http_post")
    grant(client, charge)
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    fake_gateway.add_fault("GET", r"/issuer_token$", action="status", status=500, count=1)
    response = client.get(url(charge))
    assert response.status_code == 503
    assert "Try again" in response.content.decode()


def test_online_http_post_page_renders_the_form_when_http_is_allowed(
    client, fake_gateway, settings
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ALLOW_HTTP_ISSUER_URLS": True}
    charge = create(fake_gateway, "online", brand="paypay", call_method="http_post")
    grant(client, charge)
    body = client.get(url(charge)).content.decode()
    assert '<form method="post"' in body  # the in-process fake's URL is https
    assert IssuerToken.objects.get(charge=charge).call_method == "http_post"


def test_grant_charge_access_remembers_a_bounded_list(rf, fake_gateway):
    from django.contrib.sessions.backends.signed_cookies import SessionStore

    charge = create(fake_gateway, "card")
    request = rf.get("/")
    request.session = SessionStore()
    request.session["paycharge_charges"] = [f"id-{i}" for i in range(60)]
    grant_charge_access(request, charge)
    remembered = request.session["paycharge_charges"]
    assert remembered[-1] == str(charge.gateway_id)
    assert len(remembered) == 50


def test_the_issuer_token_is_written_before_anything_is_read_in_its_transaction(
    client, fake_gateway
):
    """SQLite cannot turn a transaction that has read into a writer once another connection
    has written since: it answers "database is locked" at once, whatever the busy time-out
    (a payment page's 500 while webhooks were stored, in a fresh-clone run). So the token's
    row is written by the transaction's first statement on it, then read; fetched again,
    the one row is replaced."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    charge = create(fake_gateway, "bank_transfer")
    grant(client, charge)
    for _ in range(2):
        with CaptureQueriesContext(connection) as seen:
            assert client.get(url(charge)).status_code == 200
        on_tokens = [q["sql"] for q in seen.captured_queries if "issuertoken" in q["sql"]]
        assert on_tokens and on_tokens[0].lstrip().upper().startswith("INSERT"), on_tokens[:2]
    assert IssuerToken.objects.filter(charge=charge).count() == 1
