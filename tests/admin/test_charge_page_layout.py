"""The charge page at a laptop's 1280 px: its figures and its title stay whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from django_paycharge import services

from .test_browser_layout import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Each figure of the page on more than one line ("¥7,00" over "0"), and the title (or
#: anything else) under the buttons beside it.
BROKEN = """() => {
  const lines = (element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    const rects = [...range.getClientRects()].filter(r => r.width > 0);
    return new Set(rects.map(r => Math.round(r.top))).size;
  };
  const broken = [];
  for (const value of document.querySelectorAll("fieldset .readonly")) {
    const text = value.innerText.trim();
    if (!/^[¥￥$€£]/.test(text)) continue;
    // A box a pixel short of its figure, as a font's or the layout's rounding can make it.
    value.style.maxWidth = `${value.scrollWidth - 1}px`;
    if (lines(value) > 1) broken.push(`${text} on ${lines(value)} lines`);
    value.style.maxWidth = "";
  }
  const buttons = [...document.querySelectorAll(".object-tools a, .object-tools button")];
  const texts = "#content h1, #content > h2, .paycharge-source-note, fieldset .form-row";
  for (const title of document.querySelectorAll(texts)) {
    const range = document.createRange();
    range.selectNodeContents(title);
    const text = range.getBoundingClientRect();
    for (const button of buttons.map(b => b.getBoundingClientRect())) {
      if (text.right > button.left && text.left < button.right
          && text.top < button.bottom && text.bottom > button.top) {
        broken.push(`"${title.innerText.slice(0, 60)}" runs under the buttons`);
        break;
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("amount", [7000, 1_234_567])
def test_the_charge_page_at_1280_px_keeps_its_figures_and_title_whole(
    browser_page: Any,
    live_server: Any,
    shop: Any,
    fake_gateway_server: Any,
    settings: Any,
    amount: int,
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ORDER_URL_HOOK": lambda charge: "/shop/o/1/"}
    token = fake_gateway_server.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=amount, currency="JPY")
    charge = services.wait_for_charge(charge, timeout=5)
    services.refund_charge(charge, amount=200)  # every button: refresh, cancel, refund, history
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/admin/django_paycharge/charge/{charge.pk}/change/")
    page.wait_for_selector("#content")
    if shots := os.environ.get("PAYCHARGE_DOC_SCREENSHOTS"):
        page.screenshot(path=str(Path(shots) / f"charge-page-1280-{amount}.png"), full_page=True)
    assert page.evaluate(BROKEN) == []
