"""Contract: the gateway's official Node SDK drives the fake's subscription routes.

``univapay-node`` (pinned in node_sdk/package-lock.json; scripts/test installs it with
``npm ci`` into the repository's .tmp/node_sdk, so the test itself talks to 127.0.0.1
only) creates, reads, polls, lists (by store and by merchant), updates, reads
the charges, the scheduled payments and their charges of, suspends, unsuspends, re-cards,
simulates and deletes a subscription on the fake over real HTTP, and reads each answer
with its own code: the fake speaks the gateway's subscription shapes, in camelCase
through the SDK's conversion too. Node is the CI host's (scripts/test installs Debian's
``nodejs`` and ``npm`` where they are missing): a missing one fails, never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID, TEST_WIDGET_JWT

HERE = Path(__file__).resolve().parent / "node_sdk"
REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])
INSTALLED = REPO / ".tmp" / "node_sdk" / "node_modules"
#: Each route of univapay-node's ``Subscriptions`` and ``ScheduledPayments`` the script calls.
CALLS = [
    "create",
    "get",
    "poll",
    "list (store)",
    "list (merchant)",
    "update",
    "charges",
    "scheduled payments",
    "scheduled payment",
    "scheduled payment charges",
    "suspend",
    "unsuspend",
    "update token",
    "simulation",
    "delete",
    "get after delete",
]

pytestmark = [pytest.mark.slow, pytest.mark.db_independent]


@pytest.fixture(scope="module")
def node_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the script and the pinned SDK scripts/test installed."""
    if shutil.which("node") is None:
        pytest.fail("node is missing: scripts/test installs it (Debian's nodejs)")
    if not (INSTALLED / "univapay-node" / "package.json").exists():
        pytest.fail(
            f"univapay-node is not installed in {INSTALLED.parent}: scripts/test installs it "
            "(npm ci --prefix .tmp/node_sdk, from tests/testing/node_sdk's lock file)"
        )
    folder = tmp_path_factory.mktemp("node_sdk")
    for script in ("subscriptions.mjs", "tokens.mjs"):
        shutil.copy(HERE / script, folder / script)
    (folder / "node_modules").symlink_to(INSTALLED, target_is_directory=True)
    return folder


def _run(folder: Path, script: str, *args: Any) -> dict[str, dict[str, Any]]:
    """Each call the script made, by name; a rejected one fails with the script's output."""
    done = subprocess.run(
        ["node", script, *map(str, args)], cwd=folder, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line["call"]: line for line in lines}


def test_the_node_sdk_through_the_token_routes(node_sdk: Path, fake_gateway_server: Any) -> None:
    said = _run(
        node_sdk, "tokens.mjs", fake_gateway_server.base_url, TEST_SECRET, TEST_JWT,
        TEST_WIDGET_JWT, TEST_STORE_ID,
    )  # fmt: skip
    assert list(said) == [
        "create recurring", "get", "list (store)", "update", "renew", "delete",
        "get after delete", "create subscription",
    ]  # fmt: skip
    saved = said["create recurring"]["item"]
    assert (saved["type"], saved["usageLimit"]) == ("recurring", "monthly")
    assert said["list (store)"]["id"] == saved["id"]
    assert said["update"]["item"]["email"] == "taro@example.com"
    assert said["renew"]["item"]["previousId"] == saved["id"]
    assert said["get after delete"]["item"]["active"] is False
    assert said["create subscription"]["item"]["type"] == "subscription"


def test_the_node_sdk_through_every_subscription_route(
    node_sdk: Path, fake_gateway_server: Any
) -> None:
    token = fake_gateway_server.create_transaction_token(type="subscription")["id"]
    card = fake_gateway_server.create_transaction_token(type="subscription")["id"]
    args = [fake_gateway_server.base_url, TEST_SECRET, TEST_JWT, TEST_STORE_ID, token, card]
    done = subprocess.run(
        ["node", "subscriptions.mjs", *map(str, args)],
        cwd=node_sdk,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stdout + done.stderr
    said = {line["call"]: line for line in lines}
    assert list(said) == CALLS
    created = said["create"]["item"]
    assert (created["amount"], created["currency"], created["period"]) == (1200, "JPY", "monthly")
    assert created["metadata"] == {"order": "42"}  # camelCase and back: the SDK read it
    sub = created["id"]
    assert said["list (store)"]["id"] == sub and said["list (merchant)"]["id"] == sub
    assert said["update"]["item"]["metadata"] == {"order": "43"}
    assert said["suspend"]["status"] == "suspended" and said["unsuspend"]["status"] == "unpaid"
    assert said["update token"]["item"]["transactionTokenId"] == card
    assert said["simulation"]["id"] == "3"
    assert said["get after delete"]["status"] == "canceled"
