"""The admin's pages at a laptop's 1440 px and a phone's 390 px, in a real browser.

Every table must be readable without scrolling sideways (nothing cut off on
the right), full ids must not wrap, and every result must name its charge in
a colour that stands out from its background. The live server's gateway calls
go over real HTTP to the fake gateway server, and its webhooks come back by
real HTTP.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from django_paycharge import services
from django_paycharge.models import Charge, WebhookDelivery
from tests.waiting import wait_deliveries, wait_until

from .conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOKEN = "layout-webhook-token-0123"
WIDTHS = [1440, 390]

#: What a staff member could not read without scrolling sideways: tables wider
#: than what shows them, lines of an id wrapped, the page itself wider than the window.
LAYOUT_PROBLEMS = """() => {
  const problems = [];
  const viewport = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > viewport + 1) {
    problems.push(`page is ${document.documentElement.scrollWidth} px wide in ${viewport} px`);
  }
  for (const table of document.querySelectorAll("table")) {
    if (!table.offsetParent) continue;  // hidden
    let right = viewport;
    for (let box = table.parentElement; box && box !== document.body; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== "visible") {
        right = Math.min(right, box.getBoundingClientRect().right);
      }
    }
    const edge = table.getBoundingClientRect().right;
    if (edge > right + 1) {
      const name = table.id || table.closest("[id]")?.id || table.className;
      problems.push(`table ${name} ends at ${Math.round(edge)} px, visible to ${right} px`);
    }
  }
  for (const id of document.querySelectorAll(".paycharge-id")) {
    const lines = id.getClientRects().length;
    if (lines > 1) problems.push(`id ${id.textContent} wraps over ${lines} lines`);
  }
  return problems;
}"""

#: WCAG contrast ratio of an element's text against the first opaque background behind it.
CONTRAST = """(element) => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let box = element, background = "rgb(255, 255, 255)";
  while (box) {
    const colour = getComputedStyle(box).backgroundColor;
    if (colour !== "rgba(0, 0, 0, 0)" && colour !== "transparent") { background = colour; break; }
    box = box.parentElement;
  }
  const [a, b] = [lum(rgb(getComputedStyle(element).color)), lum(rgb(background))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


@pytest.fixture
def staff_pages(shop, live_server, fake_gateway_server, settings):
    """Deliveries received by real HTTP, the webhook configuration mirrored; the admin's URLs."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway_server.add_webhook(f"{live_server.url}/payments/webhook/", auth_token=TOKEN)
    services.sync_webhooks()
    bank = fake_gateway_server.create_transaction_token("bank_transfer")["id"]
    transfer = services.create_charge(transaction_token_id=bank, amount=240_000, currency="JPY")
    fake_gateway_server.complete(shop["awaiting"])
    wait_deliveries(fake_gateway_server)
    wait_until(
        lambda: WebhookDelivery.objects.filter(status="processed").count() >= 3,
        "three webhooks processed",
        every=0.1,
        diagnose=lambda: str(list(WebhookDelivery.objects.values("status", "last_error"))),
    )
    services.refresh_charge(transfer.gateway_id)
    services.sync_charges()  # as the periodic sync does: list items name their store
    admin = f"{live_server.url}/admin/django_paycharge"
    detail = Charge.objects.get(gateway_id=shop["awaiting"]).pk
    delivery = WebhookDelivery.objects.first()
    assert delivery is not None
    return {
        "transfer": str(transfer.gateway_id),
        "pages": [
            f"{admin}/charge/",
            f"{admin}/charge/{detail}/change/",
            f"{admin}/webhookdelivery/",
            f"{admin}/webhookdelivery/{delivery.pk}/change/",
            f"{admin}/webhookconfiguration/",
        ],
    }


def log_in(page: Any, base: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "shopadmin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#content")


def fetch_issuer_tokens(page: Any, base: str, charge_ids: list[str]) -> None:
    """Select the charges in the changelist and run "Fetch issuer token"."""
    page.goto(f"{base}{reverse('admin:django_paycharge_charge_changelist')}")
    for charge_id in charge_ids:
        row = page.locator(
            "#result_list tbody tr", has=page.locator(f"[data-charge-id='{charge_id}']")
        )
        row.locator("input.action-select").check()
    page.select_option("select[name=action]", "fetch_issuer_token_action")
    page.click("button[name=index]")
    page.wait_for_selector(".paycharge-token-result")


@pytest.mark.parametrize("width", WIDTHS)
def test_no_table_overflows_and_every_result_names_its_charge(
    browser_page,
    live_server,
    staff_pages,
    shop,
    width,
):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server.url)
    problems = {}
    for url in staff_pages["pages"]:
        page.goto(url)
        page.wait_for_selector("#content")
        found = page.evaluate(LAYOUT_PROBLEMS)
        if found:
            problems[url.removeprefix(live_server.url)] = found
    assert problems == {}

    # Deliveries name their charge (the short id the search takes).
    page.goto(f"{live_server.url}/admin/django_paycharge/webhookdelivery/")
    charge_cells = page.locator("#result_list td.field-charge_column")
    assert charge_cells.count() >= 3
    named = {charge_cells.nth(i).inner_text().strip() for i in range(charge_cells.count())}
    assert shop["awaiting"][:8] + "…" in named

    # The issuer-token results: each names its charge, legibly, and fits.
    fetch_issuer_tokens(page, live_server.url, [shop["awaiting"], staff_pages["transfer"]])
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    results = page.locator(".paycharge-token-result")
    assert results.count() == 2
    for i in range(results.count()):
        result = results.nth(i)
        charge_id = result.get_attribute("data-charge")
        link = result.locator("h2 a")
        assert charge_id in link.inner_text()
        assert link.evaluate(CONTRAST) >= 4.5, charge_id
