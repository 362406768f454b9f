"""The README's quick start and testing section, then the fake gateway's page, done literally.

``django-admin startproject`` makes the reader's project; every marked block of
README.md is then applied in order (see snippets.py): the fake gateway and
``runserver`` run as real processes on free ports. The test then does what a
reader would try: a card checkout, a declined card, a token the gateway does
not know, a convenience-store payment completed at the gateway and announced by
webhook, a bank transfer, a wallet payment that reaches the app's payment
page, and a sync of charges the gateway already had; in Chromium, a card that
asks for 3-D Secure, its challenge passed and failed.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from django_paycharge.testing import CARD_DECLINED, CARD_THREE_DS

from ..waiting import tail, wait_until
from .project import REPO, WITHOUT_GATEWAY, Project
from .snippets import snippets, unmarked_blocks

DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
SEEDED = 25  # charges the gateway has before the shop's first sync


def test_every_code_block_of_the_docs_says_what_a_reader_does_with_it():
    unmarked = {str(p.relative_to(REPO)): n for p in DOCS if (n := unmarked_blocks(p))}
    assert unmarked == {}, "add a <!-- docs-test: ... --> line above each block (snippets.py)"
    for path in DOCS:
        for snippet in snippets(path, REPO):
            assert snippet.action in (
                "install",
                "env",
                "append",
                "file",
                "shell",
                "background",
                "worker",
                "not",
            ), str(snippet)
            if snippet.action == "not":
                assert snippet.target.startswith("run: ") and len(snippet.target) > 10, str(snippet)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    made = Project.create(tmp_path / "mysite")
    yield made
    made.stop()


def widget_token(project: Project, payment_type: str, data: dict[str, object]) -> str:
    """What the gateway's widget does in the browser: POST /tokens with the browser JWT."""
    answer = requests.post(
        f"{project.url('gateway')}/tokens",
        json={"payment_type": payment_type, "type": "one_time", "email": "a@b.jp", "data": data},
        headers={"Authorization": f"Bearer {project.env['PAYCHARGE_WIDGET_JWT']}"},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    token: str = answer.json()["id"]
    return token


def checkout(project: Project, token: str, *, status: int = 200) -> requests.Response:
    """The shop's form posting the token's id, with its CSRF cookie; redirects followed."""
    browser = requests.Session()
    browser.get(f"{project.url('shop')}/admin/login/", timeout=10)  # sets the CSRF cookie
    answer = browser.post(
        f"{project.url('shop')}/shop/checkout/",
        data={"transaction_token_id": token},
        headers={"X-CSRFToken": browser.cookies["csrftoken"]},
        timeout=60,
    )
    assert answer.status_code == status, (answer.text, project.running["shop"].text()[-3000:])
    return answer


CARD = {"cardholder": "TARO YAMADA", "card_number": "4242424242424242", "exp_month": 12,
        "exp_year": 2099, "cvv": "123"}  # fmt: skip


def latest_charge(project: Project) -> tuple[str, str]:
    charge_id, status = project.query(
        "import json; from django_paycharge.models import Charge; c = Charge.objects.latest('id'); "
        "print(json.dumps([str(c.gateway_id), c.status]))"
    )
    return charge_id, status


@pytest.mark.own_database  # the new project's SQLite, whatever the leg
def test_the_readme_quick_start_takes_payments_against_the_fake_gateway(project: Project):
    sync_output = ""
    for snippet in snippets(REPO / "README.md", REPO):
        if snippet.action == "not":
            continue
        output = project.apply(snippet)
        if snippet.action == "background" and snippet.target == "gateway":
            seeded = requests.post(
                f"{project.url('gateway')}/_fake/seed", json={"count": SEEDED}, timeout=30
            )
            assert seeded.ok, seeded.text
        if "paycharge_sync" in snippet.body:
            sync_output = output
    assert set(project.running) == {"gateway", "shop"}

    # The sync mirrored what the gateway had, and the webhook configuration --webhook made.
    assert f"Charges: {SEEDED} read" in sync_output
    assert "Webhook configurations: 1 read" in sync_output

    # The checkout page: the widget's JWT (never the server's) and the form it posts.
    page = requests.get(f"{project.url('shop')}/shop/checkout/", timeout=10)
    assert page.status_code == 200, page.text
    assert f'data-jwt="{project.env["PAYCHARGE_WIDGET_JWT"]}"' in page.text
    assert project.env["PAYCHARGE_JWT"] not in page.text
    assert 'name="transaction_token_id"' in page.text

    # A card: the view waits for the result (create_charge answered "pending").
    paid = checkout(project, widget_token(project, "card", CARD))
    assert "Payment successful" in paid.text and "¥1,200 received" in paid.text

    # A declined card: the reason in words, and a way to try again that leads somewhere.
    declined = checkout(
        project, widget_token(project, "card", {**CARD, "card_number": CARD_DECLINED})
    )
    assert "Payment failed" in declined.text and "card declined" in declined.text
    again = re.search(r'<a href="([^"]+)">Try again</a>', declined.text)
    assert again is not None, declined.text
    assert requests.get(f"{project.url('shop')}{again[1]}", timeout=10).status_code == 200

    # A token the gateway does not know, or no token at all: a message on the checkout
    # page (to pay again from), never a 5xx.
    for token in (str(uuid.uuid4()), "not-a-token", ""):
        refused = checkout(project, token, status=400)
        assert "Nothing was charged" in refused.text and 'id="card"' in refused.text

    # A convenience store: the payment page says where, by when, and where the number comes from.
    store = checkout(project, widget_token(project, "konbini", {
        "customer_name": "TARO YAMADA", "convenience_store": "lawson"}))  # fmt: skip
    assert "/payments/pay/" in store.url
    assert "LAWSON" in store.text and "Pay by" in store.text and "a@b.jp" in store.text
    assert re.search(r"\(JST\)</time>", store.text), store.text  # TIME_ZONE: not UTC
    # The app's page leads back to the shop (SHOP_URL), to a page that exists.
    back = re.search(r'class="paycharge-back"><a href="([^"]+)"', store.text)
    assert back is not None, store.text
    assert requests.get(f"{project.url('shop')}{back[1]}", timeout=10).status_code == 200
    charge_id, status = latest_charge(project)
    assert status == "awaiting"
    completed = requests.post(
        f"{project.url('gateway')}/_fake/charges/{charge_id}/complete", timeout=10
    )
    assert completed.ok, completed.text
    states: list[Any] = []

    def processed() -> bool:
        states.append(project.query(
            "import json; from django_paycharge.models import Charge, WebhookDelivery; "
            f"c = Charge.objects.get(gateway_id='{charge_id}'); "
            "print(json.dumps({'status': c.status, 'deliveries': sorted("
            "WebhookDelivery.objects.filter(charge=c).values_list('status', flat=True))}))"
        ))  # fmt: skip
        return states[-1]["status"] == "successful" and "processed" in states[-1]["deliveries"]

    wait_until(
        processed,
        "the webhook of the paid convenience store charge processed",
        every=0.5,
        diagnose=lambda: f"{states[-1:]}\n{tail(project.running['shop'].text())}",
    )
    state = states[-1]
    assert state["status"] == "successful", state
    # The signal receiver of the quick start heard it (in runserver's log).
    assert re.search(r"Order A-\w+: payment successful", project.running["shop"].text())

    # A bank transfer: the account and the deadline on the app's payment page.
    bank = checkout(project, widget_token(project, "bank_transfer", {}))
    assert "/payments/pay/" in bank.url and "paycharge-account-number" in bank.text
    assert "Transfer by" in bank.text

    # An online wallet: on to the app's payment page, whose form posts to the provider
    # (plain http on this machine: ALLOW_HTTP_ISSUER_URLS, as the quick start sets it).
    wallet = checkout(project, widget_token(project, "online", {
        "brand": "paypay", "call_method": "http_post"}))  # fmt: skip
    assert "/payments/pay/" in wallet.url
    provider = f'action="{project.url("gateway")}/_fake/provider/'
    assert provider in wallet.text, wallet.text

    # The testing section's tests passed too (the shell block ran pytest in the project),
    # and still pass on a runner where none of the gateway's variables is set.
    assert any("2 passed" in output for output in project.outputs)
    assert "2 passed" in project.run(f"env {WITHOUT_GATEWAY} python -m pytest shop/tests.py")

    # docs/fake-gateway.md's tests and webhook steps, in the same project.
    for snippet in snippets(REPO / "docs" / "fake-gateway.md", REPO):
        if snippet.action != "not":
            project.apply(snippet)
    assert "4 passed" in project.outputs[-2]  # its tests; then paycharge_sync --webhooks
    assert "Webhook configurations: 1 read" in project.outputs[-1]

    # docs/signals.md's idempotent receiver and its test, in the same project.
    for snippet in snippets(REPO / "docs" / "signals.md", REPO):
        if snippet.action != "not":
            project.apply(snippet)
    assert "1 passed" in project.outputs[-1]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.own_database
@pytest.mark.parametrize("answer", ["pass", "fail"])
def test_a_new_shop_from_the_readme_takes_a_3ds_card_in_a_browser(
    project: Project, browser_page: Any, answer: str, tmp_path: Path
):
    """The walk a new user makes: the README pasted, a card that asks for 3-D Secure paid on
    the README's checkout page, the card issuer's challenge in Chromium, back on the shop's
    payment page, and (failed) "Try again" to the checkout page."""
    for snippet in snippets(REPO / "README.md", REPO):
        if snippet.action in ("env", "append", "file", "background") or (
            snippet.action == "shell" and "migrate" in snippet.body
        ):
            project.apply(snippet)
    shop, page = project.url("shop"), browser_page
    # The shop's checkout page: the card made into a token in the browser, then charged.
    page.goto(f"{shop}/shop/checkout/")
    page.fill("input[name=card_number]", CARD_THREE_DS)
    page.click("button[type=submit]")
    # The app's payment page sends the browser on to the card issuer's challenge.
    page.wait_for_url(f"{project.url('gateway')}/_fake/provider/*/3ds")
    page.click(f"#three-ds-{answer}")
    page.wait_for_url(f"{shop}/shop/payments/**")
    status = page.inner_text("#status")
    if answer == "pass":
        assert status == "Payment successful"
        assert "¥1,200 received" in page.inner_text("body")
    else:
        assert status == "Payment failed"
        assert "No money was taken" in page.inner_text("#failure")
        assert page.get_by_role("link", name="Try again").count() == 1
    charge_id, stored = latest_charge(project)
    assert stored == ("successful" if answer == "pass" else "failed")
    assert charge_id in page.url
    shots = os.environ.get("PAYCHARGE_DOC_SCREENSHOTS")
    if shots:
        page.screenshot(
            path=str(Path(shots) / f"i32-readme-3ds-return-{answer}.png"), full_page=True
        )
    if answer == "fail":
        page.click("text=Try again")  # back to the checkout page (SHOP_URL), to pay again
        page.wait_for_url(f"{shop}/shop/checkout/")
        assert page.locator("input[name=card_number]").count() == 1
    # The browser's own /favicon.ico request aside (the new project serves none).
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == []
