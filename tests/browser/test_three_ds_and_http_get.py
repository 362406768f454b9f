"""3-D Secure and http_get in a real browser: the app's pages, the fake's real HTTP server."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from django_paycharge import services
from django_paycharge.models import Charge
from django_paycharge.testing import CARD_THREE_DS
from tests.waiting import GUARD

pytestmark = [
    pytest.mark.browser,
    pytest.mark.urls("tests.browser.urls"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def shop(fake_gateway_server, live_server, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ALLOW_HTTP_ISSUER_URLS": True,
        "CHARGE_ACCESS_HOOK": lambda request, charge: True,
        "RETURN_URL": "/landing/?charge={charge_id}",
    }
    return live_server


def three_ds_charge(gateway, shop, capture=True):
    token = gateway.create_transaction_token("card", card_number=CARD_THREE_DS)["id"]
    charge = services.create_charge(
        transaction_token_id=token,
        amount=4200,
        currency="JPY",
        capture=capture,
        metadata={"order": "77"},
        three_ds_redirect_endpoint=f"{shop.url}/payments/return/3ds/",
    )
    return services.wait_for_charge(charge, timeout=GUARD)


@pytest.mark.parametrize(("answer", "status"), [("pass", "successful"), ("fail", "failed")])
def test_the_customer_answers_the_3ds_challenge_and_comes_back(
    browser_page, shop, fake_gateway_server, answer, status
):
    charge = three_ds_charge(fake_gateway_server, shop)
    assert charge.status == "awaiting"
    page = browser_page
    page.goto(f"{shop.url}/payments/pay/{charge.gateway_id}/")
    page.wait_for_url(f"{fake_gateway_server.base_url}/_fake/provider/{charge.gateway_id}/3ds")
    assert "4200 JPY" in page.locator("p").first.inner_text()
    page.click(f"#three-ds-{answer}")
    page.wait_for_url(f"{shop.url}/landing/**")
    assert parse_qs(urlsplit(page.url).query)["charge"] == [str(charge.gateway_id)]
    # The return view re-read the charge from the gateway before sending the customer on.
    assert Charge.objects.get(pk=charge.pk).status == status
    posted = [v for v in fake_gateway_server.provider_log if v.get("kind") == "three_ds"]
    assert posted[0]["content_type"].startswith("application/x-www-form-urlencoded")
    assert set(posted[0]["fields"]) == {"charge_id", "message_type", "signature"}
    assert page.console_errors == []


def test_without_javascript_the_3ds_form_has_a_button(
    browser_page_no_js, shop, fake_gateway_server
):
    charge = three_ds_charge(fake_gateway_server, shop)
    page = browser_page_no_js
    page.goto(f"{shop.url}/payments/pay/{charge.gateway_id}/")
    page.get_by_role("button", name="Continue to payment").click()
    page.click("#three-ds-pass")
    page.wait_for_url(f"{shop.url}/landing/**")
    assert Charge.objects.get(pk=charge.pk).status == "successful"


def test_an_http_get_wallet_is_opened_with_a_get(browser_page, shop, fake_gateway_server):
    token = fake_gateway_server.create_transaction_token(
        "online", brand="line_pay", call_method="http_get"
    )
    charge = services.create_charge(
        transaction_token_id=token["id"],
        amount=900,
        currency="JPY",
        metadata={"order": "5"},
        redirect_endpoint=f"{shop.url}/landing/?shop=1",
    )
    page = browser_page
    page.goto(f"{shop.url}/payments/pay/{charge.gateway_id}/")
    page.wait_for_url(f"{shop.url}/landing/**")
    query = parse_qs(urlsplit(page.url).query)
    assert query["serviceChargeId"] == [str(charge.gateway_id)] and query["order"] == ["5"]
    [visit] = fake_gateway_server.provider_log
    assert visit["method"] == "GET"
    assert visit["fields"] == charge.issuer_token.payload  # every payload field, in the query
    assert fake_gateway_server.charges[str(charge.gateway_id)]["status"] == "successful"
    assert page.console_errors == []
