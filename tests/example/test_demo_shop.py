"""Every payment flow of the example shop, in headless Chromium, against ``scripts/demo``.

The demo runs from a fresh clone (see conftest.py): the fake gateway server
and the shop talk over real HTTP, the browser creates transaction tokens on
the gateway itself, and the fake's webhooks reach the shop. Each test checks
the page the customer sees, then the order and the charge in the shop's
database, and the charge on the gateway.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import django
import pytest

from django_paycharge.money import format_money
from django_paycharge.testing import (
    CARD_DECLINED,
    CARD_INSUFFICIENT_FUNDS,
    CARD_SUCCESS,
    CARD_THREE_DS,
)

from ..test_i18n import PO as APP_CATALOG
from ..test_i18n import english_detector
from ..waiting import GUARD, browser_context, wait_until
from .demo_process import REPO, Demo

# The demo installs its own Django into its own virtualenv: the version matrix of
# scripts/test adds nothing here, so it runs once per database: on SQLite in the
# Django 5.2 session (and in `scripts/test --quick`), and in the PostgreSQL session.
_ON_POSTGRES = os.environ.get("PAYCHARGE_TEST_DB") == "postgres"
_ONCE_PER_DATABASE = _ON_POSTGRES or django.VERSION[:2] == (5, 2)
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.browser,
    pytest.mark.skipif(
        not _ONCE_PER_DATABASE,
        reason="the demo brings its own Django: run once per database, not per Django version",
    ),
]

ORDER_URL = re.compile(r"/orders/(?P<id>[0-9a-f-]{36})/$")
TIMEOUT_MS = int(GUARD * 1000)  # Playwright's waits for the demo's pages: a guard

_ORDER_QUERY = """
import json
from shop.models import Order
from django_paycharge.models import IssuerToken, WebhookDelivery
order = Order.objects.select_related("charge").get(public_id="{public_id}")
charge = order.charge
token = IssuerToken.objects.filter(charge=charge).first() if charge else None
print(json.dumps({{
    "order": {{"id": order.pk, "status": order.status, "amount": order.amount,
              "currency": order.currency, "paid": order.paid_at is not None}},
    "charge": charge and {{
        "id": str(charge.gateway_id), "status": charge.status,
        "payment_type": charge.payment_type, "amount": charge.requested_amount,
        "currency": charge.requested_currency, "metadata": charge.metadata,
        "error": charge.error, "redirect": charge.redirect,
    }},
    "issuer_token": token and {{"call_method": token.call_method,
                               "account_number": token.account_number}},
    "webhooks": list(WebhookDelivery.objects.filter(charge=charge).values_list("status", flat=True))
        if charge else [],
}}))
"""


def order_state(demo: Demo, public_id: str) -> dict[str, Any]:
    """The order, its charge, issuer token and webhook deliveries, from the shop's database."""
    state: dict[str, Any] = demo.query(_ORDER_QUERY.format(public_id=public_id))
    return state


def gateway_charge(demo: Demo, charge_id: str) -> dict[str, Any]:
    """The charge as the fake gateway holds it."""
    url = f"{demo.gateway_url}/_fake/charges/{charge_id}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        charge: dict[str, Any] = json.load(answer)
    return charge


def buy(page: Any, demo: Demo, product: int = 0, quantity: int = 1) -> int:
    """From the product list to the checkout page of a new order; returns the unit price."""
    page.goto(f"{demo.shop_url}/")
    item = page.locator("li.product").nth(product)
    price = int(re.sub(r"\D", "", item.locator(".price").inner_text()))  # ¥1,200: yen
    item.locator("input[name=quantity]").fill(str(quantity))
    item.locator("button.buy").click()
    page.wait_for_url(re.compile(r"/checkout/$"))
    return price


def pay(page: Any, payment_type: str, **fields: str) -> None:
    """Choose the payment type, fill its fields, press Pay."""
    page.check(f"input[name=payment_type][value={payment_type}]")
    for name, value in fields.items():
        page.locator(f"#checkout [name={name}]").fill(value)
    page.click("#pay-button")


def landed_order_id(page: Any) -> str:
    page.wait_for_url(ORDER_URL, timeout=TIMEOUT_MS)
    match = ORDER_URL.search(page.url)
    assert match is not None
    return match.group("id")


def assert_no_console_errors(page: Any) -> None:
    # CSP violations, failed fetches and script errors all land here.
    assert page.console_errors == []


def log_in_as_staff(page: Any, demo: Demo) -> None:
    """Sign in to the demo's admin as its staff user (the admin's pages have no icon: the
    favicon's 404 is not ours, so the console errors so far are forgotten)."""
    page.goto(f"{demo.shop_url}/admin/login/?next=/admin/")
    page.fill("#id_username", demo.admin_user)
    page.fill("#id_password", demo.admin_password)
    page.click("input[type=submit]")
    page.console_errors.clear()


def test_card_payment_marks_the_order_paid(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    tokens_requests: list[Any] = []
    page.on("request", lambda r: tokens_requests.append(r) if r.url.endswith("/tokens") else None)
    price = buy(page, demo, product=0, quantity=2)
    checkout_html = page.content()
    widget_jwt = page.locator("#checkout").get_attribute("data-jwt")
    pay(page, "card", card_number=CARD_SUCCESS)
    public_id = landed_order_id(page)
    # The return may land before the webhook: the page polls and reloads once paid.
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Paid"
    assert "Thank you" in page.locator(".paid").inner_text()
    assert_no_console_errors(page)
    assert "paycharge_gateway_requests_total{" in metrics_body(demo)  # the checkout's calls

    # The token was made by the browser on the gateway, with the JWT alone.
    [token_request] = [r for r in tokens_requests if r.method == "POST"]
    assert token_request.url == f"{demo.gateway_url}/tokens"
    authorization = token_request.headers["authorization"]
    assert authorization.startswith("Bearer ey") and authorization.count(".") == 2
    assert "demo-" not in authorization  # the app token's secret never reaches the browser
    # ...nor the server's JWT (the fake gateway prints it at start): the widget has a
    # browser app token of its own, and the checkout page shows only that one.
    log = (Path(demo.env["SHOP_DATA_DIR"]) / "gateway.log").read_text()
    printed = re.search(r"^\s+JWT=(\S+)$", log, re.MULTILINE)
    assert printed is not None, log[-2000:]
    server_jwt = printed.group(1)
    assert authorization == f"Bearer {widget_jwt}" and widget_jwt != server_jwt
    assert server_jwt not in checkout_html

    state = order_state(demo, public_id)
    assert state["order"]["status"] == "paid" and state["order"]["paid"]
    charge = state["charge"]
    assert charge["status"] == "successful" and charge["payment_type"] == "card"
    # The amount is the order's (two items), set by the server.
    assert charge["amount"] == state["order"]["amount"] == 2 * price
    assert charge["metadata"] == {"order": state["order"]["id"]}
    remote = gateway_charge(demo, charge["id"])
    assert remote["status"] == "successful"
    assert remote["charged_amount"] == state["order"]["amount"]


@pytest.mark.parametrize(
    ("card", "reason"),
    [(CARD_DECLINED, "card declined"), (CARD_INSUFFICIENT_FUNDS, "insufficient funds")],
)
def test_failed_card_shows_the_reason_then_another_card_pays(
    demo: Demo, browser_page: Any, card: str, reason: str
) -> None:
    page = browser_page
    buy(page, demo, product=1)
    pay(page, "card", card_number=card)
    public_id = landed_order_id(page)
    message = page.locator(".payment-error").inner_text()
    assert message == f"Your payment did not go through: {reason}. No money was taken."
    page.locator("#order-status[data-status=failed]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Payment failed"
    failed = order_state(demo, public_id)
    assert failed["order"]["status"] == "failed"
    assert failed["charge"]["status"] == "failed"
    assert failed["charge"]["error"]["message"] == reason

    page.click("text=Try again")
    page.wait_for_url(re.compile(r"/checkout/$"))
    pay(page, "card", card_number=CARD_SUCCESS)
    assert landed_order_id(page) == public_id
    # The return may land before the webhook: the page polls and reloads once paid.
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Paid"
    paid = order_state(demo, public_id)
    assert paid["order"]["status"] == "paid"
    assert paid["charge"]["status"] == "successful"
    assert paid["charge"]["id"] != failed["charge"]["id"]
    assert gateway_charge(demo, failed["charge"]["id"])["status"] == "failed"
    assert_no_console_errors(page)


def test_bank_transfer_shows_the_account_and_the_webhook_marks_it_paid(
    demo: Demo, browser_page: Any
) -> None:
    page = browser_page
    price = buy(page, demo, product=2, quantity=3)
    pay(page, "bank_transfer")
    public_id = landed_order_id(page)
    assert page.locator("#order-status").inner_text() == "Waiting for your bank transfer"
    shown_number = page.locator(".paycharge-account-number").inner_text()
    awaiting = order_state(demo, public_id)
    assert awaiting["charge"]["status"] == "awaiting"
    assert awaiting["charge"]["payment_type"] == "bank_transfer"
    # The customer's own page shows the full number, from the issuer token.
    assert shown_number == awaiting["issuer_token"]["account_number"] != ""
    assert awaiting["order"]["status"] == "awaiting"

    # The customer pays at their bank (another tab); the order page updates by itself.
    bank = page.context.new_page()
    bank.goto(f"{demo.shop_url}/demo/bank/{public_id}/")
    bank.click("#demo-bank-pay")
    bank.wait_for_selector("#demo-bank-result[data-state=done]", timeout=TIMEOUT_MS)
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Paid"

    paid = order_state(demo, public_id)
    assert paid["order"]["status"] == "paid"
    assert paid["charge"]["status"] == "successful"
    assert paid["charge"]["amount"] == 3 * price
    # It came by webhook: the deliveries are stored and processed (inline, or by the
    # worker, which may still be busy with the last one), and none failed.
    assert "processed" in paid["webhooks"]
    assert "failed" not in paid["webhooks"]
    assert gateway_charge(demo, paid["charge"]["id"])["status"] == "successful"
    assert_no_console_errors(page)


def test_konbini_waits_for_the_store_payment(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    buy(page, demo, product=0)
    pay(page, "konbini")
    public_id = landed_order_id(page)
    assert order_state(demo, public_id)["charge"]["status"] == "awaiting"
    # What the customer must do: where, by when, and where the payment number comes from.
    assert page.locator(".paycharge-store").inner_text() == "7-Eleven"
    assert page.locator(".paycharge-deadline time").count() == 1
    assert "buyer@example.com" in page.locator(".paycharge-number-source").inner_text()
    page.click("#demo-bank-link")
    page.wait_for_url(re.compile(r"/demo/bank/"), timeout=TIMEOUT_MS)
    # The button is enabled by its script: the click waits for it, not a blind time.
    page.click("#demo-bank-pay")
    page.wait_for_selector("#demo-bank-result[data-state=done]", timeout=TIMEOUT_MS)
    page.click("#back-to-order")
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    state = order_state(demo, public_id)
    assert state["order"]["status"] == "paid"
    assert state["charge"]["payment_type"] == "konbini"
    assert_no_console_errors(page)


def test_online_wallet_goes_to_the_provider_and_back(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    navigations: list[tuple[str, str]] = []
    page.on(
        "request",
        lambda r: navigations.append((r.method, r.url)) if r.is_navigation_request() else None,
    )
    buy(page, demo, product=1)
    pay(page, "online")
    public_id = landed_order_id(page)
    # The return may land before the webhook: the page polls and reloads once paid.
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Paid"

    state = order_state(demo, public_id)
    charge_id = state["charge"]["id"]
    # Shop -> the app's payment page -> the provider (form POST) -> the return view -> order.
    urls = [(method, url.split("?")[0]) for method, url in navigations]
    pay_page = ("GET", f"{demo.shop_url}/payments/pay/{charge_id}/")
    provider = ("POST", f"{demo.gateway_url}/_fake/provider/{charge_id}")
    back = ("GET", f"{demo.shop_url}/payments/return/")
    order_page = ("GET", f"{demo.shop_url}/orders/{public_id}/")
    assert urls.index(pay_page) < urls.index(provider) < urls.index(back) < urls.index(order_page)
    [return_url] = [url for method, url in navigations if "/payments/return/" in url]
    assert f"serviceChargeId={charge_id}" in return_url

    assert state["order"]["status"] == "paid"
    assert state["charge"]["status"] == "successful"
    assert state["charge"]["payment_type"] == "online"
    assert state["issuer_token"]["call_method"] == "http_post"
    assert state["charge"]["redirect"]["endpoint"] == f"{demo.shop_url}/payments/return/"
    assert_no_console_errors(page)


def test_the_demo_admin_user_sees_the_paid_order(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    buy(page, demo)
    pay(page, "card", card_number=CARD_SUCCESS)
    public_id = landed_order_id(page)
    state = order_state(demo, public_id)
    order_id = state["order"]["id"]
    log_in_as_staff(page, demo)
    page.goto(f"{demo.shop_url}/admin/shop/order/{order_id}/change/")
    assert public_id in page.locator("#content").inner_text()
    assert "Paid" in page.locator(".field-status").inner_text()
    # The app's own admin, in the same site: the mirrored charge.
    page.goto(f"{demo.shop_url}/admin/django_paycharge/charge/?q={state['charge']['id']}")
    assert page.locator("#result_list tbody tr").count() == 1


def metrics_body(demo: Demo) -> str:
    """The demo's metrics page, read with the token ``scripts/demo`` printed."""
    text = demo.text()
    metrics = re.search(r"Metrics:\s+(http://\S+)\s", text)
    token = re.search(r'Authorization: Bearer (\S+?)"', text)
    assert metrics and token, text
    request = urllib.request.Request(
        metrics.group(1), headers={"Authorization": f"Bearer {token.group(1)}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.read().decode())


def test_the_dashboard_shows_the_seeded_charges_and_the_metrics_answer(
    demo: Demo, browser_page: Any
) -> None:
    text = demo.text()
    dashboard = re.search(r"Dashboard:\s+(http://\S+)", text)
    metrics = re.search(r"Metrics:\s+(http://\S+)\s", text)
    token = re.search(r'Authorization: Bearer (\S+?)"', text)
    assert dashboard and metrics and token, text
    page = browser_page
    log_in_as_staff(page, demo)
    page.goto(dashboard.group(1))
    takings = page.locator("#paycharge-takings").inner_text()
    assert "All payment types" in takings  # the seeded month, synced by the demo
    assert page.locator("svg.paycharge-chart rect.paycharge-bar").count() == 30
    body = metrics_body(demo)
    # The database's gauges are there from the start; the gateway's counters come with the
    # first gateway call of the demo's processes (test_card_payment_marks_the_order_paid).
    assert "paycharge_attention" in body and "paycharge_sync_running_seconds" in body
    refused = urllib.request.Request(metrics.group(1))
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(refused, timeout=10)
    assert denied.value.code == 403


def test_a_3ds_card_confirms_with_the_issuer_then_is_paid(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    navigations: list[tuple[str, str]] = []
    page.on(
        "request",
        lambda r: navigations.append((r.method, r.url)) if r.is_navigation_request() else None,
    )
    buy(page, demo, product=1)
    pay(page, "card", card_number=CARD_THREE_DS)
    # The app's payment page posts to the issuer's challenge, on the gateway.
    page.wait_for_url(re.compile(r"/_fake/provider/[0-9a-f-]{36}/3ds$"), timeout=TIMEOUT_MS)
    assert "Confirm your payment" in page.locator("h1").inner_text()
    page.click("#three-ds-pass")
    public_id = landed_order_id(page)
    # The return may land before the webhook: the page polls and reloads once paid.
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Paid"

    state = order_state(demo, public_id)
    charge_id = state["charge"]["id"]
    urls = [(method, url.split("?")[0]) for method, url in navigations]
    pay_page = ("GET", f"{demo.shop_url}/payments/pay/{charge_id}/")
    challenge = ("POST", f"{demo.gateway_url}/_fake/provider/{charge_id}/3ds")
    back = ("GET", f"{demo.shop_url}/payments/return/3ds/")
    order_page = ("GET", f"{demo.shop_url}/orders/{public_id}/")
    assert urls.index(pay_page) < urls.index(challenge) < urls.index(back)
    assert urls.index(back) < urls.index(order_page)
    assert state["charge"]["status"] == "successful" and state["charge"]["payment_type"] == "card"
    assert state["issuer_token"]["call_method"] == "http_post"
    assert gateway_charge(demo, charge_id)["three_ds"]["redirect_endpoint"] == (
        f"{demo.shop_url}/payments/return/3ds/"
    )
    assert_no_console_errors(page)


def test_an_http_get_wallet_opens_its_page_with_a_get(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    navigations: list[tuple[str, str]] = []
    page.on(
        "request",
        lambda r: navigations.append((r.method, r.url)) if r.is_navigation_request() else None,
    )
    buy(page, demo, product=0)
    page.check("input[name=payment_type][value=online]")
    page.select_option("#checkout select[name=brand]", "line_pay")
    page.click("#pay-button")
    public_id = landed_order_id(page)
    # The return may land before the webhook: the page polls and reloads once paid.
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#order-status").inner_text() == "Paid"
    state = order_state(demo, public_id)
    charge_id = state["charge"]["id"]
    assert state["issuer_token"]["call_method"] == "http_get"
    provider = [
        (method, url)
        for method, url in navigations
        if url.startswith(f"{demo.gateway_url}/_fake/provider/{charge_id}")
    ]
    assert [method for method, _url in provider] == ["GET"]
    assert "signature=" in provider[0][1]  # the payload travels in the query
    assert state["charge"]["status"] == "successful"
    assert_no_console_errors(page)


_REFUNDS_QUERY = """
import json
from django_paycharge.models import Refund
print(json.dumps([[r.amount, r.status, r.reason] for r in Refund.objects.filter(
    charge__gateway_id="{charge_id}").order_by("created_on")]))
"""


def test_staff_refund_from_the_order_page(demo: Demo, browser_page: Any) -> None:
    page = browser_page
    log_in_as_staff(page, demo)
    price = buy(page, demo, product=0, quantity=2)
    pay(page, "card", card_number=CARD_SUCCESS)
    public_id = landed_order_id(page)
    charge_id = order_state(demo, public_id)["charge"]["id"]
    assert page.locator("#refund-left").inner_text() == f"¥{2 * price:,}"
    page.fill("#refund-form input[name=amount]", str(price))
    page.select_option("#refund-form select[name=reason]", "duplicate")
    page.click("#refund-button")
    page.wait_for_url(ORDER_URL, timeout=TIMEOUT_MS)
    # The gateway answers a refund pending: the page lists it so, its amount already
    # reserved; refund_finished then settles it and the page counts it refunded.
    assert "Refund of" in page.locator(".messages").inner_text()
    assert page.locator("#refund-left").inner_text() == f"¥{price:,}"

    def settled() -> bool:
        page.reload()
        status = page.locator(".refunds li").first.get_attribute("data-status")
        return status == "successful"

    wait_until(settled, "the refund settled by refund_finished", every=0.5)
    assert page.locator("#refunded-total").inner_text() == f"¥{price:,}"
    assert page.locator("#refund-left").inner_text() == f"¥{price:,}"
    refunds: list[list[Any]] = demo.query(_REFUNDS_QUERY.replace("{charge_id}", charge_id))
    assert refunds == [[price, "successful", "duplicate"]]
    assert_no_console_errors(page)


def test_a_subscription_is_paid_then_the_clock_button_makes_a_renewal_order(
    demo: Demo, browser_page: Any
) -> None:
    page = browser_page
    log_in_as_staff(page, demo)
    tokens: list[Any] = []
    page.on("request", lambda r: tokens.append(r) if r.url.endswith("/tokens") else None)
    page.goto(f"{demo.shop_url}/")
    page.locator("li.product", has_text="a month").locator("button.buy").click()
    page.wait_for_url(re.compile(r"/checkout/$"))
    pay(page, "card", card_number=CARD_SUCCESS)
    landed_order_id(page)
    # checkout.js asked the gateway for a subscription token; the first payment's webhook
    # then marks the order paid (the page polls and reloads by itself).
    [token] = [r for r in tokens if r.method == "POST"]
    assert json.loads(token.post_data)["type"] == "subscription"
    page.wait_for_selector("#order-status[data-status=paid]", timeout=TIMEOUT_MS)
    assert page.locator("#subscription-status").get_attribute("data-status") == "current"
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d", page.locator("#next-payment").get_attribute("data-date")
    )

    page.click("#demo-clock-button")
    page.wait_for_url(ORDER_URL, timeout=TIMEOUT_MS)
    assert "moved a month ahead" in page.locator(".messages").inner_text()

    def renewals() -> int:
        page.reload()
        count: int = page.locator("#renewals li").count()
        return count

    wait_until(renewals, "the renewal's order on the page", every=0.5)
    assert page.locator("#renewals li").count() == 1
    assert_no_console_errors(page)


def shot(page: Any, name: str) -> None:
    """With ``PAYCHARGE_SHOP_SCREENSHOTS=<dir>`` (docs/img), the page as docs show it."""
    target = os.environ.get("PAYCHARGE_SHOP_SCREENSHOTS")
    if target:
        page.screenshot(path=str(Path(target) / name), full_page=True)


def test_a_3ds_card_subscribes_through_the_issuer_and_comes_back_active(
    demo: Demo, browser_page: Any
) -> None:
    """The first payment of a subscription with 3-D Secure, in the browser; the sign-up
    and order pages in English and Japanese (the docs' screenshots)."""
    page = browser_page
    page.set_viewport_size({"width": 1000, "height": 800})
    page.goto(f"{demo.shop_url}/")
    product = page.locator("li.product", has_text="a month").get_attribute("data-product")
    subscribe = page.locator(f"li.product[data-product='{product}'] button.buy")
    subscribe.click()
    page.wait_for_url(re.compile(r"/checkout/$"))
    assert page.locator("input[name=payment_type][value=konbini]").count() == 1
    assert page.locator("input[name=payment_type][value=bank_transfer]").count() == 0
    shot(page, "shop-subscription-signup.png")
    pay(page, "card", card_number=CARD_THREE_DS)
    # The same page and return as a one-off charge's 3-D Secure.
    page.wait_for_url(re.compile(r"/_fake/provider/[0-9a-f-]{36}/3ds$"), timeout=TIMEOUT_MS)
    page.click("#three-ds-pass")
    public_id = landed_order_id(page)
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#subscription-status").get_attribute("data-status") == "current"
    state = order_state(demo, public_id)
    assert state["charge"]["status"] == "successful"
    assert gateway_charge(demo, state["charge"]["id"])["three_ds"]["redirect_endpoint"] == (
        f"{demo.shop_url}/payments/return/3ds/"
    )
    # A month on (the fake's clock, as the staff button moves it): the renewal's order.
    moved = urllib.request.Request(
        f"{demo.gateway_url}/_fake/clock",
        data=b'{"days": 31}',
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(moved, timeout=30) as answer:
        assert json.load(answer)["payments_tried"] >= 1

    def renewals() -> int:
        page.reload()
        count: int = page.locator("#renewals li").count()
        return count

    wait_until(renewals, "the renewal's order on the page", every=0.5)
    shot(page, "shop-subscription-order.png")
    assert_no_console_errors(page)

    page.set_extra_http_headers({"Accept-Language": "ja"})
    page.reload()
    assert page.locator("#subscription-status").inner_text() == "継続中"
    assert english_on(page) == []
    shot(page, "shop-subscription-order-ja.png")
    page.goto(f"{demo.shop_url}/")
    subscribe.click()
    page.wait_for_url(re.compile(r"/checkout/$"))
    assert english_on(page) == []
    shot(page, "shop-subscription-signup-ja.png")


def _fake_control(demo: Demo, name: str, required: bool) -> None:
    request = urllib.request.Request(
        f"{demo.gateway_url}/_fake/{name}",
        data=json.dumps({"required": required}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


def test_a_card_saved_at_sign_up_pays_again_with_its_code_then_the_subscription_card_changes(
    demo: Demo, browser_page: Any
) -> None:
    page = browser_page
    gateway_calls: list[Any] = []
    shop_posts: list[Any] = []
    page.on(
        "request",
        lambda r: (gateway_calls if r.url.startswith(demo.gateway_url) else shop_posts).append(r),
    )
    _fake_control(demo, "cvv_authorization", True)  # the store checks a saved card's code
    try:
        # Sign up with "save this card": a subscription token, and a recurring one beside it.
        page.goto(f"{demo.shop_url}/")
        page.locator("li.product", has_text="a month").locator("button.buy").click()
        page.wait_for_url(re.compile(r"/checkout/$"))
        page.check("#checkout [name=save_card]")
        pay(page, "card", card_number=CARD_SUCCESS)
        signup = landed_order_id(page)
        made = [json.loads(r.post_data)["type"] for r in gateway_calls if r.method == "POST"]
        assert made == ["subscription", "recurring"]
        page.wait_for_selector("#order-status[data-status=paid]", timeout=TIMEOUT_MS)

        # A one-off order: one step with the saved card, its code given to the gateway.
        buy(page, demo, product=0)
        assert "ending 4242" in page.locator("#saved-card-button").inner_text()
        page.fill("#saved-card-cvv", "123")
        page.click("#saved-card-button")
        paid = landed_order_id(page)
        page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
        [patch] = [r for r in gateway_calls if r.method == "PATCH"]
        assert json.loads(patch.post_data) == {"data": {"cvv": "123"}}
        [saved_post] = [r for r in shop_posts if r.url.endswith("/pay/saved-card/")]
        assert "123" not in (saved_post.post_data or "")  # the code never reached the shop
        state = order_state(demo, paid)
        assert state["charge"]["status"] == "successful"
    finally:
        _fake_control(demo, "cvv_authorization", False)

    # The subscription's card, changed from its order page with the widget.
    page.goto(f"{demo.shop_url}/orders/{signup}/")
    page.click("#change-card-link")
    page.wait_for_url(re.compile(r"/card/$"))
    page.locator("#checkout [name=card_number]").fill(CARD_SUCCESS)
    page.click("#pay-button")
    page.wait_for_url(ORDER_URL, timeout=TIMEOUT_MS)
    assert "card was changed" in page.locator(".messages").inner_text()
    [change] = [r for r in shop_posts if r.method == "POST" and r.url.endswith("/card/")]
    new_token = urllib.parse.parse_qs(change.post_data)["transaction_token_id"][0]
    changed: str = demo.query(
        "import json; from shop.models import Order; "
        f"o = Order.objects.get(public_id='{signup}'); "
        "print(json.dumps(str(o.subscription.raw.get('transaction_token_id'))))"
    )
    assert changed == new_token
    assert_no_console_errors(page)


# -- one language per page, and the pages a new customer meets -----------------------------------

SHOP_CATALOG = REPO / "example_project" / "shop" / "locale" / "ja" / "LC_MESSAGES" / "django.po"


@pytest.fixture
def japanese(chromium: Any) -> Any:
    """A browser whose language is Japanese (its own cookies)."""
    context = browser_context(chromium, locale="ja-JP")
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()


def english_on(page: Any) -> list[str]:
    """The shop's and the app's English strings left on a page shown in Japanese."""
    assert page.get_attribute("html", "lang") == "ja"
    text = page.locator("body").inner_text()
    for data in ("Paycharge", "JPY", "PayPay", "au PAY", "merpay", "7-Eleven", "FamilyMart"):
        text = text.replace(data, " ")
    return english_detector(APP_CATALOG, SHOP_CATALOG)(text)


def test_a_japanese_customer_reads_japanese_only(demo: Demo, japanese: Any) -> None:
    page = japanese
    page.goto(f"{demo.shop_url}/")
    assert page.locator("h1").inner_text() == "商品一覧"
    assert format_money(2400, "JPY", "ja") in page.locator("li.product .price").all_inner_texts()
    assert english_on(page) == []
    buy(page, demo, product=0)
    assert english_on(page) == []
    pay(page, "konbini")
    public_id = landed_order_id(page)
    assert page.locator("#order-status").inner_text() == "店頭でのお支払い待ち"
    assert page.locator(".paycharge-store").inner_text() == "セブン-イレブン"
    assert english_on(page) == []
    page.click("#demo-bank-link")
    page.wait_for_url(re.compile(r"/demo/bank/"), timeout=TIMEOUT_MS)
    assert page.locator("h1").inner_text() == "デモ用コンビニ"
    assert english_on(page) == []
    # The button is enabled by its script: the click waits for it, not a blind time.
    page.click("#demo-bank-pay")
    page.wait_for_selector("#demo-bank-result[data-state=done]", timeout=TIMEOUT_MS)
    page.click("#back-to-order")
    page.locator("#order-status[data-status=paid]").wait_for(timeout=TIMEOUT_MS)
    assert english_on(page) == []
    # Paid: the demo store has nothing left to take.
    page.goto(f"{demo.shop_url}/demo/bank/{public_id}/")
    assert page.locator("#demo-bank-pay").count() == 0
    assert "お支払いの必要はありません" in page.locator("#demo-bank-nothing-to-pay").inner_text()
    assert english_on(page) == []
    assert_no_console_errors(page)


@pytest.mark.parametrize(
    ("locale", "heading", "back"),
    [
        ("en-US", "Page not found", "Back to the shop"),
        ("ja-JP", "ページが見つかりません", "ショップに戻る"),
    ],
)
def test_an_order_opened_in_another_browser_gets_a_page_with_a_way_back(
    demo: Demo, browser_page: Any, chromium: Any, locale: str, heading: str, back: str
) -> None:
    buy(browser_page, demo)
    pay(browser_page, "card", card_number=CARD_SUCCESS)
    public_id = landed_order_id(browser_page)
    # Another browser: none of the first's cookies.
    context = browser_context(chromium, locale=locale)
    try:
        other = context.new_page()
        response = other.goto(f"{demo.shop_url}/orders/{public_id}/")
        assert response.status == 404
        assert other.locator("h1").inner_text() == heading
        other.get_by_role("link", name=back).click()
        other.wait_for_url(f"{demo.shop_url}/")
        charge_id = order_state(demo, public_id)["charge"]["id"]
        response = other.goto(f"{demo.shop_url}/payments/pay/{charge_id}/")
        assert response.status == 404  # the app's page, in the shop's layout
        assert other.locator(".paycharge-not-found").count() == 1
    finally:
        context.close()


def test_refused_payment_details_are_named_in_the_customers_words(
    demo: Demo, browser_page: Any
) -> None:
    page = browser_page
    buy(page, demo)
    pay(page, "card", card_number=CARD_SUCCESS, exp_year="2020")
    error = page.locator("#checkout-error")
    error.wait_for()
    assert error.inner_text() == "This card has expired. Please use another card."
    # A token that is not one, posted as the checkout would: no gateway field name shown.
    page.evaluate(
        """() => {
        const form = document.getElementById("charge-form");
        form.elements.namedItem("transaction_token_id").value = "not-a-token";
        form.submit();
        }"""
    )
    page.wait_for_load_state()
    shown = page.locator("#checkout-error").inner_text()
    assert shown and "transaction_token_id" not in shown
