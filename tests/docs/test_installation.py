"""docs/installation.md, done literally in a new project, then used in a real browser.

Every marked block is applied in order (see snippets.py), the fake gateway and
``runserver`` run as real processes, and headless Chromium pays two orders on the
guide's checkout page: by card (the token made in the browser with the JWT, the
outcome waited for), and by bank transfer (the account shown by the issuer-token
tag, the transfer completed at the gateway and announced by webhook, the order
marked paid by the guide's signal receiver). The guide's own tests ran too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from .project import REPO, Project
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


def test_the_installation_guide_takes_payments_in_a_browser(project: Project, browser_page: Any):
    sync_outputs = []
    for snippet in snippets(REPO / "docs" / "installation.md", REPO):
        if snippet.action != "not":
            output = project.apply(snippet)
            if "paycharge_sync" in snippet.body:
                sync_outputs.append(output)
    assert set(project.running) == {"gateway", "shop"}
    assert "Webhook configurations: 1 read" in sync_outputs[-1]
    assert any("2 passed" in output for output in project.outputs)  # the guide's tests
    shop, page = project.url("shop"), browser_page
    broken = []  # failed loads (the browser's own favicon request aside)
    page.on(
        "response",
        lambda r: broken.append(r.url) if r.status >= 400 and "favicon" not in r.url else None,
    )

    # A card: the page makes the token at the gateway, the view charges and waits.
    card_order = new_order(project, 1200)
    page.goto(f"{shop}/shop/orders/{card_order}/checkout/")
    page.fill("input[name=card_number]", "4242 4242 4242 4242")
    page.click("button[type=submit]")
    page.wait_for_url(f"{shop}/shop/orders/{card_order}/")
    assert page.inner_text("#status") == "Paid"

    # A bank transfer: the account to pay into, then the gateway's webhook marks it paid.
    bank_order = new_order(project, 240_000)
    page.goto(f"{shop}/shop/orders/{bank_order}/checkout/")
    page.check("input[value=bank_transfer]")
    page.click("button[type=submit]")
    page.wait_for_url(f"{shop}/shop/orders/{bank_order}/")
    assert page.inner_text("#status") == "Waiting for your payment"
    assert page.inner_text(".paycharge-account-number").strip().isdigit()
    charge_id = project.query(
        "from django_paycharge.models import Charge; "
        f"print('\"%s\"' % Charge.objects.get(metadata__order={bank_order}).gateway_id)"
    )
    completed = requests.post(
        f"{project.url('gateway')}/_fake/charges/{charge_id}/complete", timeout=10
    )
    assert completed.ok, completed.text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page.reload()
        if page.inner_text("#status") == "Paid":
            break
        time.sleep(0.5)
    assert page.inner_text("#status") == "Paid", project.running["shop"].text()[-2000:]
    assert broken == []
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []
