"""docs/installation.md, done literally in a new project, then used in a real browser.

Every marked block is applied in order (see snippets.py), the fake gateway and
``runserver`` run as real processes, and headless Chromium pays orders on the
guide's checkout page: by card (the token made in the browser with the JWT, the
outcome waited for), by a card that asks for 3-D Secure (the challenge passed,
and failed), by a declined card (and again, after "Try again"), with a token the
gateway does not know, at a convenience store and by bank transfer (what to do
on the app's payment page, the payment completed at the gateway and announced
by webhook, the order marked paid by the guide's signal receiver). The guide's
own tests ran too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from django_paycharge.testing import CARD_DECLINED, CARD_THREE_DS

from ..waiting import tail, wait_until
from .project import REPO, WITHOUT_GATEWAY, Project
from .snippets import snippets

pytestmark = pytest.mark.browser


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    made = Project.create(tmp_path / "mysite")
    yield made
    made.stop()


def new_order(project: Project, amount: int) -> int:
    """An order, as the shop's cart would make it."""
    pk: int = project.query(
        f"from shop.models import Order; print(Order.objects.create(amount={amount}).pk)"
    )
    return pk


def wait_for_paid(project: Project, page: Any, order: int) -> None:
    """Reload the order page until the gateway's webhook has marked the order paid."""

    def paid() -> bool:
        page.goto(f"{project.url('shop')}/shop/orders/{order}/")
        return bool(page.inner_text("#status") == "Paid")

    wait_until(
        paid,
        f"order {order} marked paid",
        every=0.5,
        diagnose=lambda: tail(project.running["shop"].text()),
    )


def complete_at_the_gateway(project: Project, order: int) -> None:
    """The customer pays at the store or the bank: the fake completes the charge."""
    charge_id = project.query(
        "from django_paycharge.models import Charge; "
        f"print('\"%s\"' % Charge.objects.get(metadata__order={order}).gateway_id)"
    )
    completed = requests.post(
        f"{project.url('gateway')}/_fake/charges/{charge_id}/complete", timeout=10
    )
    assert completed.ok, completed.text


def pay_by_card(project: Project, page: Any, order: int, number: str) -> None:
    page.goto(f"{project.url('shop')}/shop/orders/{order}/checkout/")
    page.fill("input[name=card_number]", number)
    page.click("button[type=submit]")


@pytest.mark.own_database  # the new project's SQLite, whatever the leg
def test_the_installation_guide_takes_payments_in_a_browser(project: Project, browser_page: Any):
    sync_outputs = []
    for snippet in snippets(REPO / "docs" / "installation.md", REPO):
        if snippet.action != "not":
            output = project.apply(snippet)
            if "paycharge_sync" in snippet.body:
                sync_outputs.append(output)
    assert set(project.running) == {"gateway", "shop"}
    assert "Webhook configurations: 1 read" in sync_outputs[-1]
    assert any("4 passed" in output for output in project.outputs)  # the guide's tests
    # ...which need none of the gateway's variables, as the guide says (a CI runner).
    assert "4 passed" in project.run(f"env {WITHOUT_GATEWAY} python -m pytest shop/tests.py")
    shop, page = project.url("shop"), browser_page
    broken = []  # failed loads (the browser's own favicon request aside)
    page.on(
        "response",
        lambda r: broken.append(r.url) if r.status >= 400 and "favicon" not in r.url else None,
    )

    # A card: the page makes the token at the gateway, the view charges and waits.
    card_order = new_order(project, 1200)
    pay_by_card(project, page, card_order, "4242 4242 4242 4242")
    page.wait_for_url(f"{shop}/shop/orders/{card_order}/")
    wait_for_paid(project, page, card_order)  # paid now, or after the page's 3 s refreshes

    # 3-D Secure: on to the card issuer's challenge, passed, and back on the order.
    three_ds = new_order(project, 3300)
    pay_by_card(project, page, three_ds, CARD_THREE_DS)
    page.wait_for_url(f"{project.url('gateway')}/_fake/provider/*/3ds")
    page.click("#three-ds-pass")
    page.wait_for_url(f"{shop}/shop/orders/{three_ds}/")
    wait_for_paid(project, page, three_ds)

    # 3-D Secure failed, and a declined card: the reason, and a way to try again.
    for number, reason in ((CARD_THREE_DS, "(3-D Secure)"), (CARD_DECLINED, "card declined")):
        order = new_order(project, 2000)
        pay_by_card(project, page, order, number)
        if number == CARD_THREE_DS:
            page.wait_for_url(f"{project.url('gateway')}/_fake/provider/*/3ds")
            page.click("#three-ds-fail")
        page.wait_for_url(f"{shop}/shop/orders/{order}/")
        assert page.inner_text("#status") == "Payment failed"
        assert reason in page.inner_text("#failure") and "No money was taken" in page.inner_text(
            "#failure"
        )
        page.click("#try-again")
        page.wait_for_url(f"{shop}/shop/orders/{order}/checkout/")
    # ...and the retry pays.
    pay_by_card(project, page, order, "4242424242424242")
    page.wait_for_url(f"{shop}/shop/orders/{order}/")
    wait_for_paid(project, page, order)

    # A token the gateway does not know (a stale page, a forged post): a message, no 5xx.
    unknown = new_order(project, 800)
    page.goto(f"{shop}/shop/orders/{unknown}/checkout/")
    page.evaluate(
        """(token) => { const form = document.getElementById("charge");
        form.transaction_token_id.value = token; form.submit(); }""",
        str(uuid.uuid4()),
    )
    page.wait_for_url(f"{shop}/shop/orders/{unknown}/pay/")
    assert "Nothing was charged" in page.inner_text("#error")
    broken.remove(f"{shop}/shop/orders/{unknown}/pay/")  # its 400 is the point

    # A convenience store: the store, the deadline, where the number comes from.
    store_order = new_order(project, 1500)
    page.goto(f"{shop}/shop/orders/{store_order}/checkout/")
    page.check("input[value=konbini]")
    page.select_option("select[name=convenience_store]", "family_mart")
    page.fill("input[name=email]", "hanako@example.jp")
    page.click("button[type=submit]")
    page.wait_for_url(f"{shop}/payments/pay/**")
    assert page.inner_text(".paycharge-store") == "FamilyMart"
    assert page.inner_text(".paycharge-amount") == "¥1,500"
    assert page.locator(".paycharge-deadline time").count() == 1
    assert page.inner_text(".paycharge-deadline").endswith("(JST)")  # the shop's time zone
    assert "hanako@example.jp" in page.inner_text(".paycharge-number-source")
    if shots := os.environ.get("PAYCHARGE_DOC_SCREENSHOTS"):
        page.screenshot(path=str(Path(shots) / "i32-guide-konbini-payment-page.png"))
    page.click(".paycharge-back a")  # "Back to the shop": PAYCHARGE["SHOP_URL"] is routed
    page.wait_for_url(f"{shop}/shop/")
    assert page.inner_text("#shop") == "The shop"
    page.goto(f"{shop}/shop/orders/{store_order}/")
    assert page.inner_text("#status") == "Waiting for your payment"
    complete_at_the_gateway(project, store_order)
    wait_for_paid(project, page, store_order)

    # A bank transfer: the account to pay into, the deadline; then the webhook marks it paid.
    bank_order = new_order(project, 240_000)
    page.goto(f"{shop}/shop/orders/{bank_order}/checkout/")
    page.check("input[value=bank_transfer]")
    page.click("button[type=submit]")
    page.wait_for_url(f"{shop}/payments/pay/**")
    assert page.inner_text(".paycharge-account-number").strip().isdigit()
    assert page.locator(".paycharge-deadline time").count() == 1
    assert "¥240,000" in page.inner_text(".paycharge-instructions")
    complete_at_the_gateway(project, bank_order)
    wait_for_paid(project, page, bank_order)

    # A cashier (the guide's group) opens the charge's order from its admin page.
    project.query(
        "from django.contrib.auth.models import Group, User; "
        "u = User.objects.create_user('kasumi', password='cashier-pass-7', is_staff=True); "
        "u.groups.add(Group.objects.get(name='Cashiers')); print(1)"
    )
    page.goto(f"{shop}/admin/login/")
    page.fill("input[name=username]", "kasumi")
    page.fill("input[name=password]", "cashier-pass-7")
    page.click("input[type=submit]")
    page.wait_for_url(f"{shop}/admin/")
    pk = project.query(
        "from django_paycharge.models import Charge; "
        f"print(Charge.objects.get(metadata__order={bank_order}).pk)"
    )
    page.goto(f"{shop}/admin/django_paycharge/charge/{pk}/change/")
    with page.expect_navigation() as opened:
        page.click(".paycharge-order-link")
    assert opened.value is not None and opened.value.status == 200
    assert page.url == f"{shop}/admin/shop/order/{bank_order}/change/"
    assert broken == []
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []
