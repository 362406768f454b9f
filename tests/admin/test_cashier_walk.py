"""A cashier's walk in Chromium: refund half a charge from its page, then find it as
partially refunded in the list, through the filter, and in the CSV; the same charge page
in Japanese.

With ``PAYCHARGE_DOC_SCREENSHOTS=<dir>`` the test saves what it looked at.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from django_paycharge import services
from django_paycharge.models import Refund
from tests.waiting import GUARD, browser_context

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "cashier-pw-4821"


def shot(page: Any, name: str) -> None:
    target = os.environ.get("PAYCHARGE_DOC_SCREENSHOTS")
    if target:
        page.screenshot(path=str(Path(target) / name), full_page=True)


@pytest.fixture
def cashier(db: Any) -> User:
    user = User.objects.create_user("cashier", password=PASSWORD, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_paycharge",
            codename__in=["view_charge", "refund_charge", "view_refund"],
        )
    )
    return user


def log_in(page: Any, live_server: Any, next_url: str) -> None:
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.fill("#id_username", "cashier")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")


def test_a_cashier_refunds_half_and_finds_it_partially_refunded(
    browser_page: Any, live_server: Any, fake_gateway_server: Any, cashier: User
) -> None:
    gateway = fake_gateway_server
    token = gateway.create_transaction_token("card")["id"]
    charge = services.wait_for_charge(
        services.create_charge(transaction_token_id=token, amount=1200, currency="JPY"),
        timeout=GUARD,
    )
    other = services.wait_for_charge(
        services.create_charge(transaction_token_id=token, amount=900, currency="JPY"),
        timeout=GUARD,
    )
    assert charge.status == other.status == "successful"
    page = browser_page
    page.set_viewport_size({"width": 1600, "height": 1000})
    charge_page = f"/admin/django_paycharge/charge/{charge.pk}/change/"
    log_in(page, live_server, charge_page)
    page.wait_for_selector(".paycharge-source-note")

    # Refund… on the charge's page: half of it, said twice before it is sent.
    page.click("button[data-action=refund_charges]")
    page.check("input[name=scope][value=part]")
    page.fill("input[name=amount]", "600")
    page.select_option("select[name=reason]", "customer_request")
    page.click("input[type=submit].default")
    page.wait_for_selector("[data-step=review]")
    assert "¥600" in page.inner_text(".paycharge-restated")
    assert page.inner_text(".paycharge-left-after") == "¥600"
    page.click("#paycharge-confirm")

    # Back on the charge's page, which says where the money is.
    page.wait_for_url(f"{live_server.url}{charge_page}")
    assert "refund of ¥600 is Pending" in page.inner_text("ul.messagelist")  # its answer
    services.sync_charge_children(charge)  # its end, as the refund_finished webhook tells it
    page.reload()
    page.wait_for_selector(".paycharge-source-note")
    assert page.locator(".paycharge-refund-partially_refunded").count() == 1
    assert page.inner_text(".field-refunded_total .readonly") == "¥600"
    assert page.inner_text(".field-refundable_total .readonly") == "¥600"
    assert Refund.objects.get().amount == 600

    # The list: the badge, and the filter finds it (and only it).
    page.goto(f"{live_server.url}/admin/django_paycharge/charge/")
    page.click("#changelist-filter a:has-text('Partially refunded')")
    page.wait_for_url("**refunds=partially_refunded**")
    listed = page.locator("#result_list [data-charge-id]")
    assert listed.count() == 1 and listed.first.get_attribute("data-charge-id") == str(
        charge.gateway_id
    )
    assert "Partially refunded" in page.inner_text("#result_list")
    shot(page, "i32-admin-partially-refunded-list.png")

    # The CSV of that list: the same charge, refunded ¥600, ¥600 left.
    with page.expect_download() as download:
        page.click("a.paycharge-export-link")
    text = Path(download.value.path()).read_text(encoding="utf-8-sig")
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert row["charge_id"] == str(charge.gateway_id)
    assert (row["refund_state"], row["refunded_amount"], row["left_to_refund"]) == (
        "partially_refunded", "600", "600"
    )  # fmt: skip
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []


def test_the_japanese_charge_page_of_a_refunded_charge(
    chromium: Any, live_server: Any, fake_gateway_server: Any, cashier: User
) -> None:
    token = fake_gateway_server.create_transaction_token("card")["id"]
    charge = services.wait_for_charge(
        services.create_charge(transaction_token_id=token, amount=1200, currency="JPY"),
        timeout=GUARD,
    )
    services.refund_charge(charge, amount=500, reason="customer_request")
    services.sync_charge_children(charge)  # its end, as the refund_finished webhook tells it
    context = browser_context(
        chromium, locale="ja-JP", extra_http_headers={"Accept-Language": "ja"}
    )
    page = context.new_page()
    page.set_viewport_size({"width": 1600, "height": 1200})
    charge_page = f"/admin/django_paycharge/charge/{charge.pk}/change/"
    log_in(page, live_server, charge_page)
    page.wait_for_selector(".paycharge-source-note")
    title = page.title()
    assert "成功" in title and "successful" not in title
    assert page.locator(".paycharge-refund-partially_refunded").inner_text() == "一部返金済み"
    body = page.inner_text("#content")
    assert "￥500" in body and "￥700" in body and "JPY" not in body
    assert "1回限り" in body and "one_time" not in body
    shot(page, "i32-admin-charge-page-ja.png")
    page.goto(f"{live_server.url}/admin/django_paycharge/charge/")
    assert "一部返金済み" in page.inner_text("#result_list")
    context.close()
