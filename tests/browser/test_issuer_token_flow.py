"""Issue 5 in a real browser: the tag's form reaches the fake provider and comes back."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from django_paycharge import services

pytestmark = [
    pytest.mark.browser,
    pytest.mark.urls("tests.browser.urls"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def online_charge(fake_gateway_server, live_server, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ALLOW_HTTP_ISSUER_URLS": True,
        "CHARGE_ACCESS_HOOK": lambda request, charge: True,
    }
    token = fake_gateway_server.create_transaction_token(
        "online", brand="paypay", call_method="http_post"
    )
    charge = services.create_charge(
        transaction_token_id=token["id"],
        amount=1500,
        currency="JPY",
        metadata={"order": "9", "note": "a&b"},
        redirect_endpoint=f"{live_server.url}/landing/?shop=1",
    )
    services.fetch_issuer_token(charge)
    return charge


def assert_back_at_the_shop(page, live_server, charge, fake_gateway_server):
    page.wait_for_url(f"{live_server.url}/landing/**")
    query = parse_qs(urlsplit(page.url).query)
    assert query["serviceChargeId"] == [str(charge.gateway_id)]
    assert query["serviceTokenId"] == [str(charge.transaction_token_id)]
    assert query["order"] == ["9"] and query["note"] == ["a&b"] and query["shop"] == ["1"]
    [visit] = fake_gateway_server.provider_log
    assert visit["method"] == "POST"
    assert visit["content_type"].startswith("application/x-www-form-urlencoded")
    expected = charge.issuer_token.payload
    assert visit["fields"] == expected  # exactly the payload fields


def test_the_payment_page_auto_submits_and_the_customer_comes_back(
    browser_page, live_server, online_charge, fake_gateway_server
):
    browser_page.goto(f"{live_server.url}/payments/pay/{online_charge.gateway_id}/")
    assert_back_at_the_shop(browser_page, live_server, online_charge, fake_gateway_server)
    assert fake_gateway_server.charges[str(online_charge.gateway_id)]["status"] == "successful"


def test_without_javascript_the_noscript_button_submits_the_same_form(
    browser_page_no_js, live_server, online_charge, fake_gateway_server
):
    page = browser_page_no_js
    page.goto(f"{live_server.url}/payments/pay/{online_charge.gateway_id}/")
    assert page.url.endswith(f"/payments/pay/{online_charge.gateway_id}/")  # nothing ran
    page.get_by_role("button", name="Continue to payment").click()
    assert_back_at_the_shop(page, live_server, online_charge, fake_gateway_server)


def test_no_csp_violation_under_a_strict_nonce_policy(
    browser_page, live_server, online_charge, fake_gateway_server
):
    browser_page.goto(f"{live_server.url}/csp-pay/{online_charge.gateway_id}/")
    assert_back_at_the_shop(browser_page, live_server, online_charge, fake_gateway_server)
    assert not [e for e in browser_page.console_errors if "Content Security Policy" in e]


def test_the_same_policy_blocks_a_script_without_the_nonce(
    browser_page, live_server, online_charge, fake_gateway_server
):
    # The control that shows the policy is really enforced in this browser.
    browser_page.goto(f"{live_server.url}/csp-pay/{online_charge.gateway_id}/?nonce=0")
    browser_page.wait_for_timeout(500)
    assert "/csp-pay/" in browser_page.url
    assert [e for e in browser_page.console_errors if "Content Security Policy" in e]
    assert fake_gateway_server.provider_log == []
    assert fake_gateway_server.charges[str(online_charge.gateway_id)]["status"] == "awaiting"
