"""The admin in a real browser: log in, filter, open a charge, refresh it from the gateway.

The live server's gateway calls go over real HTTP to the fake gateway server.
With ``PAYCHARGE_ADMIN_SCREENSHOTS=docs/img`` the test also writes the
screenshots used by docs/admin.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
