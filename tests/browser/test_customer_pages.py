"""The app's customer pages in a real browser, in English and in Japanese.

Styled (the app's stylesheet is loaded), in the browser's language with no
English left on a Japanese page, with a way back to the shop
(``PAYCHARGE["SHOP_URL"]``), and without JavaScript only the text that applies.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.access import session_owns_charge
from django_paycharge.money import format_money

from ..test_i18n import english_detector
from ..waiting import browser_context

pytestmark = [
    pytest.mark.browser,
    pytest.mark.urls("tests.browser.urls"),
    pytest.mark.django_db(transaction=True),
]

SHOP_URL = "/shop/"
LANGUAGES = {"en": "en-US", "ja": "ja-JP"}
TEXTS = {
    "en": {
        "not found": "We cannot show this payment here",
        "back": "Back to the shop",
        "continue": "Continue to the payment provider to pay.",
        "taking you": "Taking you to the payment provider…",
        "account id": "Account ID",
    },
    "ja": {
        "not found": "このお支払いはここでは表示できません",
        "back": "ショップに戻る",
        "continue": "決済事業者のページに進んでお支払いください。",
        "taking you": "決済事業者のページに移動しています…",
        "account id": "口座ID",
    },
}


@pytest.fixture
def charges(fake_gateway_server, settings) -> dict[str, Any]:
    """An online-wallet and a bank-transfer charge; only ?mine=1 visitors may see them."""

    def may_see(request: Any, charge: Any) -> bool:
        return request.GET.get("mine") == "1" or session_owns_charge(request, charge)

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ALLOW_HTTP_ISSUER_URLS": True,
        "CHARGE_ACCESS_HOOK": may_see,
        "SHOP_URL": SHOP_URL,
    }
    wallet = fake_gateway_server.create_transaction_token(
        "online", brand="paypay", call_method="http_post"
    )
    bank = fake_gateway_server.create_transaction_token("bank_transfer")
    return {
        "online": services.create_charge(
            transaction_token_id=wallet["id"], amount=2400, currency="JPY"
        ),
        "bank": services.create_charge(
            transaction_token_id=bank["id"], amount=240_000, currency="JPY"
        ),
        "gateway": fake_gateway_server,
    }


def open_page(chromium: Any, language: str, *, javascript: bool = True) -> Iterator[Any]:
    context = browser_context(chromium, locale=LANGUAGES[language], java_script_enabled=javascript)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(params=sorted(LANGUAGES))
def language(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def page(chromium: Any, language: str) -> Iterator[Any]:
    yield from open_page(chromium, language)


@pytest.fixture
def page_no_js(chromium: Any, language: str) -> Iterator[Any]:
    yield from open_page(chromium, language, javascript=False)


def assert_styled_in_language(page: Any, language: str, data: tuple[str, ...] = ()) -> None:
    """The app's stylesheet applies, the page is in ``language``, and it leads back to the shop.

    ``data``: what the gateway sent (a branch's name...), shown as it is.
    """
    assert page.get_attribute("html", "lang") == language
    style = page.locator(".paycharge-page").evaluate(
        "e => [getComputedStyle(e).maxWidth, getComputedStyle(e).borderTopLeftRadius]"
    )
    assert style == ["640px", "10px"]
    back = page.get_by_role("link", name=TEXTS[language]["back"])
    assert back.get_attribute("href") == SHOP_URL
    if language == "ja":
        text = page.locator("body").inner_text()
        for value in data:
            text = text.replace(value, " ")
        assert english_detector()(text) == []


def test_a_charge_this_browser_may_not_see_gets_the_apps_404(page, language, live_server, charges):
    for charge_id in (charges["online"].gateway_id, uuid.uuid4()):  # theirs, or none at all
        response = page.goto(f"{live_server.url}/payments/pay/{charge_id}/")
        assert response.status == 404
        assert page.locator("h1").inner_text() == TEXTS[language]["not found"]
        assert_styled_in_language(page, language)
    response = page.goto(f"{live_server.url}/payments/return/?serviceChargeId={uuid.uuid4()}")
    assert response.status == 404
    assert page.locator("h1").inner_text() == TEXTS[language]["not found"]
    page.get_by_role("link", name=TEXTS[language]["back"]).click()
    page.wait_for_url(f"{live_server.url}{SHOP_URL}")


def test_without_javascript_the_payment_page_says_only_what_to_do(
    page_no_js, language, live_server, charges
):
    page = page_no_js
    page.goto(f"{live_server.url}/payments/pay/{charges['online'].gateway_id}/?mine=1")
    shown = page.locator("main").inner_text()  # what is rendered visible, hidden text left out
    assert TEXTS[language]["continue"] in shown
    assert TEXTS[language]["taking you"] not in shown
    assert page.locator(".paycharge-redirecting").count() == 1  # there, for the script to show
    assert_styled_in_language(page, language)


def test_the_bank_transfer_page_labels_the_account_id_as_one(page, language, live_server, charges):
    page.goto(f"{live_server.url}/payments/pay/{charges['bank'].gateway_id}/?mine=1")
    labels = page.locator(".paycharge-bank-account dt").all_inner_texts()
    assert labels[0] == TEXTS[language]["account id"]
    assert format_money(240_000, "JPY", language) in page.locator("main").inner_text()
    token = charges["bank"].issuer_token
    assert_styled_in_language(page, language, (token.branch_name, token.account_holder_name))


def test_the_return_retry_page_when_the_gateway_is_down(page, language, live_server, charges):
    charges["gateway"].add_fault("GET", r"/charges/", action="status", status=503, count=10)
    charge_id = charges["online"].gateway_id
    response = page.goto(f"{live_server.url}/payments/return/?serviceChargeId={charge_id}")
    assert response.status == 503
    assert_styled_in_language(page, language)
