"""The dashboard in Chromium: the shop's seeded test charges, in English and Japanese, with and
without JavaScript, and every "needs attention" link followed.

With ``PAYCHARGE_ADMIN_SCREENSHOTS=<dir>`` the test writes ``admin-dashboard.png`` and
``admin-dashboard-ja.png`` there.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from django_paycharge.models import WebhookDelivery

from .conftest import PASSWORD
from .test_browser import shot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, next_url):
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.fill("#id_username", "shopadmin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")


def test_the_dashboard_shows_the_shops_money(browser_page, live_server, shop, settings):
    settings.TIME_ZONE = "Asia/Tokyo"
    WebhookDelivery.objects.create(dedupe_key="b-1", body="{}", received_at=timezone.now(),
                                   status="failed", last_error="example")  # fmt: skip
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1000})
    broken = []
    page.on(
        "response",
        lambda r: broken.append(r.url) if r.status >= 400 and "favicon" not in r.url else None,
    )
    log_in(page, live_server, "/admin/")
    page.click("a:has-text('Dashboard')")
    page.wait_for_selector("#paycharge-dashboard")
    assert "Live charges" in page.inner_text(".paycharge-dashboard-context")
    page.click("a:has-text('Show test charges')")
    page.wait_for_url("**mode=test**")
    assert "Asia/Tokyo" in page.inner_text(".paycharge-dashboard-context")
    takings = page.inner_text("#paycharge-takings")
    assert "¥" in takings and "All payment types" in takings
    assert page.locator("svg.paycharge-chart rect.paycharge-bar").count() == 30
    box = page.locator("svg.paycharge-chart").bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 150
    failures = page.inner_text("#paycharge-failures")
    assert "306: card declined" in failures  # the shop's declined A-1002
    assert "Convenience store" in page.inner_text("#paycharge-open")  # the awaiting A-1001
    shot(page, "admin-dashboard.png")

    failed = page.locator("[data-item='deliveries_failed']")
    assert failed.inner_text().startswith("1")
    failed.locator("a").click()
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list tbody tr").count() == 1
    assert broken == []
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []


def test_in_japanese_and_without_javascript(browser_page_no_js, live_server, shop):
    user = User.objects.get(username="shopadmin")
    assert user.is_superuser
    page = browser_page_no_js
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.context.set_extra_http_headers({"Accept-Language": "ja"})
    log_in(page, live_server, "/admin/django_paycharge/dashboard/%3Fmode%3Dtest")
    page.wait_for_selector("#paycharge-dashboard")
    text = page.inner_text("#paycharge-dashboard")
    assert "要対応" in text and "売上" in text and "￥" in text
    # No script: the chart is drawn all the same, and its figures are in the table.
    assert page.locator("svg.paycharge-chart rect.paycharge-bar").count() == 30
    assert page.locator(".paycharge-chart-data tbody tr").count() == 30
    shot(page, "admin-dashboard-ja.png")
