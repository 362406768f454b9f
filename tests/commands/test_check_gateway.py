"""paycharge_check_gateway against the fake gateway: a line for each failure, and success."""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_paycharge.testing import TEST_SECRET

pytestmark = pytest.mark.django_db

SHOP = "https://shop.example"
HOOK = f"{SHOP}/payments/webhook/"
TOKEN = "test-webhook-token"


@pytest.fixture
def configured(fake_gateway, settings):
    """The fake's account, its webhook token configured and the webhook registered."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": ["old-token", TOKEN]}
    fake_gateway.add_webhook(HOOK, auth_token=TOKEN)
    return fake_gateway


def run(*args: str) -> tuple[bool, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("paycharge_check_gateway", *args, stdout=out, stderr=err)
    except CommandError as exc:
        err.write(f"{exc}\n")
        return False, out.getvalue(), err.getvalue()
    return True, out.getvalue(), err.getvalue()


def failures(err: str) -> list[str]:
    return [line.strip() for line in err.splitlines() if "FAILED:" in line]


def test_a_ready_account_passes(configured):
    ok, out, err = run("--public-url", SHOP)
    assert ok, err
    assert "the credentials are accepted and reach store" in out
    assert f"calls {HOOK}, is active and carries a token of WEBHOOK_AUTH_TOKENS" in out
    assert "The gateway check passed." in out and err == ""


def test_a_webhook_without_the_refund_and_cancel_events_passes_with_a_note(configured):
    """A refund is answered pending: without refund_finished only a sync ends it."""
    ok, out, err = run("--public-url", SHOP)
    assert ok and err == ""
    [note] = [line for line in out.splitlines() if "note:" in line]
    assert "does not send refund_finished, cancel_finished" in note and "paycharge_sync" in note
    configured.state.webhooks.clear()
    configured.add_webhook(
        HOOK,
        ("charge_updated", "charge_finished", "refund_finished", "cancel_finished"),
        auth_token=TOKEN,
    )
    ok, out, _ = run("--public-url", SHOP)
    assert ok and "note:" not in out


def test_wrong_credentials_are_one_line_without_the_secret(configured, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "wrong-secret-0123456789"}
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert "refused the credentials of account default (401" in line
    assert "SECRET and JWT" in line
    assert "wrong-secret" not in err and TEST_SECRET not in err
    assert "The gateway check failed for account(s): default." in err


def test_a_store_that_does_not_exist(configured, settings):
    missing = str(uuid.uuid4())
    settings.PAYCHARGE = {**settings.PAYCHARGE, "STORE_ID": missing, "MERCHANT_ID": None}
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert f"The gateway has no store {missing} (404): check STORE_ID" in line


def test_a_store_the_token_does_not_reach(configured, settings):
    other = str(uuid.uuid4())
    configured.state.add_store(other, merchant_id=str(uuid.uuid4()))
    settings.PAYCHARGE = {**settings.PAYCHARGE, "STORE_ID": other, "MERCHANT_ID": None}
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert "may not read the store's charges (403" in line


def test_an_unreachable_gateway(configured, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "BASE_URL": "http://user:pw@127.0.0.1:9/",
        "MAX_RETRIES": 0,
    }
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert "The gateway at http://127.0.0.1:9 could not be reached" in line
    assert "pw" not in err


def test_no_webhook_registered(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    ok, out, err = run("--public-url", SHOP)
    assert not ok and "the credentials are accepted" in out
    [line] = failures(err)
    assert "No webhook is registered for store" in line and f"register {HOOK}" in line


def test_a_webhook_at_another_url(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway.add_webhook("https://old.example/hooks/pay?key=s3cret", auth_token=TOKEN)
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert f"calls {HOOK} (the ones registered call https://old.example/hooks/pay)" in line
    assert "s3cret" not in err


def test_a_webhook_without_its_trailing_slash(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway.add_webhook(HOOK.rstrip("/"), auth_token=TOKEN)
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert f"calls {HOOK.rstrip('/')}, not {HOOK}" in line and "redirect" in line


def test_a_webhook_whose_token_is_not_configured(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": ["another-token"]}
    fake_gateway.add_webhook(HOOK, auth_token="the-gateways-token")
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert "is not one of WEBHOOK_AUTH_TOKENS" in line
    assert "the-gateways-token" not in err and "another-token" not in err


def test_no_webhook_tokens_configured(fake_gateway, settings):
    fake_gateway.add_webhook(HOOK, auth_token=TOKEN)
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    lines = failures(err)
    assert any("WEBHOOK_AUTH_TOKENS of account default is empty" in line for line in lines)
    assert any("is not one of WEBHOOK_AUTH_TOKENS" in line for line in lines)


@pytest.mark.parametrize(
    ("webhook", "expected"),
    [
        ({"active": False}, "is not active"),
        ({"triggers": ("charge_updated",)}, "does not send charge_finished"),
        ({"auth_token": None}, "did not show webhook"),
    ],
)
def test_a_webhook_inactive_without_its_trigger_or_its_token(
    fake_gateway, settings, webhook: dict[str, Any], expected: str
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    fake_gateway.add_webhook(HOOK, **{"auth_token": TOKEN, **webhook})
    ok, _, err = run("--public-url", SHOP)
    assert not ok
    [line] = failures(err)
    assert expected in line


def test_without_a_store_id_the_credentials_are_still_checked(configured, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "STORE_ID": None, "MERCHANT_ID": None}
    ok, out, err = run("--public-url", SHOP)
    assert not ok and "the credentials are accepted" in out
    [line] = failures(err)
    assert "STORE_ID of account default is not set" in line


def test_a_named_account_is_checked_at_its_own_url(configured, settings):
    keys = configured.settings()
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ACCOUNTS": {"jp": {**keys, "WEBHOOK_AUTH_TOKENS": [TOKEN]}},
    }
    ok, _, err = run("--public-url", SHOP, "--account", "jp")
    assert not ok  # the default account's webhook URL is not the named account's
    [line] = failures(err)
    assert f"calls {HOOK}jp/" in line
    configured.add_webhook(f"{HOOK}jp/", auth_token=TOKEN)
    ok, out, err = run("--public-url", SHOP + "/")
    assert ok, err
    assert "Account default:" in out and "Account jp:" in out


def test_a_public_url_that_is_not_one(configured):
    ok, _, err = run("--public-url", "shop.example")
    assert not ok and "--public-url must be the shop's absolute http(s) address" in err
