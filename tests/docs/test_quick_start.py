"""The README's quick start and testing section, then the fake gateway's page, done literally.

``django-admin startproject`` makes the reader's project; every marked block of
README.md is then applied in order (see snippets.py): the fake gateway and
``runserver`` run as real processes on free ports. The test then does what a
reader would try: a card checkout, a convenience-store payment completed at the
gateway and announced by webhook, a wallet payment that reaches the app's
payment page, and a sync of charges the gateway already had.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from .project import REPO, Project
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


def checkout(project: Project, token: str) -> requests.Response:
    """The shop's form posting the token's id, with its CSRF cookie."""
    browser = requests.Session()
    browser.get(f"{project.url('shop')}/admin/login/", timeout=10)  # sets the CSRF cookie
    answer = browser.post(
        f"{project.url('shop')}/shop/checkout/",
        data={"transaction_token_id": token},
        headers={"X-CSRFToken": browser.cookies["csrftoken"]},
        timeout=60,
    )
    assert answer.status_code == 200, project.running["shop"].text()[-3000:]
    return answer


CARD = {"cardholder": "TARO YAMADA", "card_number": "4242424242424242", "exp_month": 12,
        "exp_year": 2099, "cvv": "123"}  # fmt: skip


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

    # A card: the view waits for the result (create_charge answered "pending").
    paid = checkout(project, widget_token(project, "card", CARD))
    assert paid.text == "Payment successful"

    # A convenience store: awaiting until the customer pays; the webhook brings the news.
    store = checkout(project, widget_token(project, "konbini", {
        "customer_name": "TARO YAMADA", "convenience_store": "lawson"}))  # fmt: skip
    assert store.text == "Payment awaiting"
    charge_id, status = project.query(
        "import json; from django_paycharge.models import Charge; c = Charge.objects.latest('id'); "
        "print(json.dumps([str(c.gateway_id), c.status]))"
    )
    assert status == "awaiting"
    completed = requests.post(
        f"{project.url('gateway')}/_fake/charges/{charge_id}/complete", timeout=10
    )
    assert completed.ok, completed.text
    deadline = time.monotonic() + 30
    state = {}
    while time.monotonic() < deadline:
        state = project.query(
            "import json; from django_paycharge.models import Charge, WebhookDelivery; "
            f"c = Charge.objects.get(gateway_id='{charge_id}'); "
            "print(json.dumps({'status': c.status, 'deliveries': sorted("
            "WebhookDelivery.objects.filter(charge=c).values_list('status', flat=True))}))"
        )
        if state["status"] == "successful" and "processed" in state["deliveries"]:
            break
        time.sleep(0.5)
    assert state["status"] == "successful", state
    # The signal receiver of the quick start heard it (in runserver's log).
    assert "Order A-1001: payment successful" in project.running["shop"].text()

    # An online wallet: on to the app's payment page, whose form posts to the provider
    # (plain http on this machine: ALLOW_HTTP_ISSUER_URLS, as the quick start sets it).
    wallet = checkout(project, widget_token(project, "online", {
        "brand": "paypay", "call_method": "http_post"}))  # fmt: skip
    assert "/payments/pay/" in wallet.url
    provider = f'action="{project.url("gateway")}/_fake/provider/'
    assert provider in wallet.text, wallet.text

    # The testing section's test passed too (the shell block ran pytest in the project).
    assert any("1 passed" in output for output in project.outputs)

    # docs/fake-gateway.md's tests and webhook steps, in the same project.
    for snippet in snippets(REPO / "docs" / "fake-gateway.md", REPO):
        if snippet.action != "not":
            project.apply(snippet)
    assert "3 passed" in project.outputs[-2]  # its tests; then paycharge_sync --webhooks
    assert "Webhook configurations: 1 read" in project.outputs[-1]

    # docs/signals.md's idempotent receiver and its test, in the same project.
    for snippet in snippets(REPO / "docs" / "signals.md", REPO):
        if snippet.action != "not":
            project.apply(snippet)
    assert "1 passed" in project.outputs[-1]
