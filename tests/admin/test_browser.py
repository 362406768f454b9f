"""The admin in a real browser: log in, filter, open a charge, refresh it from the gateway;
the subscriptions' list and page, in English and in Japanese.

The live server's gateway calls go over real HTTP to the fake gateway server.
With ``PAYCHARGE_ADMIN_SCREENSHOTS=docs/img`` the tests also write the
screenshots used by docs/admin.md and docs/subscriptions.md.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from django_paycharge import services
from django_paycharge.models import Subscription

from .conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    target = os.environ.get("PAYCHARGE_ADMIN_SCREENSHOTS")
    if target:
        page.screenshot(path=str(Path(target) / name), full_page=True)


def test_log_in_filter_open_and_refresh(browser_page, live_server, fake_gateway_server, shop):
    page = browser_page
    page.set_viewport_size({"width": 1800, "height": 1000})
    broken = []  # failed loads (the browser's own favicon request aside)
    page.on(
        "response",
        lambda r: broken.append(r.url) if r.status >= 400 and "favicon" not in r.url else None,
    )
    page.goto(f"{live_server.url}/admin/login/?next=/admin/django_paycharge/charge/")
    page.fill("#id_username", "shopadmin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#result_list")
    shot(page, "admin-charges.png")

    # Filter: awaiting konbini charges.
    page.click("#changelist-filter a:has-text('Awaiting payment')")
    page.wait_for_url("**status__exact=awaiting**")
    page.click("#changelist-filter a:has-text('Convenience store')")
    page.wait_for_url("**payment_type__exact=konbini**")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() >= 1
    for i in range(rows.count()):
        assert "Awaiting payment" in rows.nth(i).inner_text()

    # Open the charge, check the page, then the customer pays at the store.
    page.click(f"#result_list [data-charge-id='{shop['awaiting']}']")
    page.wait_for_selector(".paycharge-source-note")
    assert "source of truth" in page.inner_text(".paycharge-source-note")
    assert "A-1001" in page.inner_text(".field-metadata_pretty")
    fake_gateway_server.complete(shop["awaiting"])

    # Back to the filtered list: select it and run "Refresh from gateway".
    page.go_back()
    page.wait_for_selector("#result_list")
    row = page.locator(
        "#result_list tbody tr", has=page.locator(f"[data-charge-id='{shop['awaiting']}']")
    )
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", "refresh_from_gateway")
    page.click("button[name=index]")
    success = page.locator("ul.messagelist li.success")
    success.first.wait_for()
    assert f"Charge {shop['awaiting']} refreshed: Successful." in success.first.inner_text()
    # The list is still filtered on awaiting: the charge left it.
    assert page.locator(f"[data-charge-id='{shop['awaiting']}']").count() == 0

    page.goto(f"{live_server.url}/admin/django_paycharge/charge/?q={shop['awaiting']}")
    assert "Successful" in page.inner_text("#result_list")
    assert broken == []
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []

    # The detail page of the declined charge (for the docs).
    page.goto(f"{live_server.url}/admin/django_paycharge/charge/?q={shop['failed']}")
    page.click(f"#result_list [data-charge-id='{shop['failed']}']")
    page.wait_for_selector(".field-error_pretty")
    assert "306: card declined" in page.inner_text(".field-error_pretty")
    shot(page, "admin-charge-detail.png")


def test_the_subscriptions_list_and_page_in_english_and_japanese(
    browser_page, live_server, fake_gateway_server, shop
):
    gateway = fake_gateway_server
    for n, (amount, plan) in enumerate([(1200, None), (3300, 6), (980, None)]):
        token = gateway.create_transaction_token("card", type="subscription")["id"]
        services.create_subscription(
            transaction_token_id=token,
            amount=amount,
            currency="JPY",
            period="monthly",
            metadata={"order_id": f"S-{2001 + n}"},
            subscription_plan={"plan_type": "fixed_cycles", "fixed_cycles": plan} if plan else None,
        )
    gateway.move_clock(timedelta(days=31))  # a renewal each: two charges a subscription
    services.sync_subscriptions()
    fixed_plan = Subscription.objects.get(amount=3300)
    assert fixed_plan.status == "current" and fixed_plan.payments_left == 4
    services.scheduled_payments(fixed_plan)  # the page's inline: two paid, the next one

    page = browser_page
    page.set_viewport_size({"width": 1500, "height": 900})
    page.goto(f"{live_server.url}/admin/login/?next=/admin/django_paycharge/subscription/")
    page.fill("#id_username", "shopadmin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    detail = f"/admin/django_paycharge/subscription/{fixed_plan.pk}/change/"
    for language, current in [("en", "Current"), ("ja", "継続中")]:
        page.set_extra_http_headers({"Accept-Language": language})
        page.goto(f"{live_server.url}/admin/django_paycharge/subscription/")
        assert page.get_attribute("html", "lang") == language
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == 3
        assert current in rows.first.inner_text()
        suffix = "" if language == "en" else "-ja"
        shot(page, f"admin-subscriptions{suffix}.png")
        page.goto(live_server.url + detail)
        assert "S-2002" in page.inner_text(".field-metadata_pretty")
        assert page.locator(".paycharge-subscription-charges li").count() == 2
        assert page.locator("#scheduled_payments-group tbody tr").count() >= 3
        shot(page, f"admin-subscription-detail{suffix}.png")
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []
