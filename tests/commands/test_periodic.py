"""``paycharge_periodic`` (the cron entry point), ``paycharge_sync --all-accounts``, pruning."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from django_paycharge.models import Charge, ChargeRequest, WebhookDelivery

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def _delivery(key, *, age, status="received", attempts=0):
    return WebhookDelivery.objects.create(
        dedupe_key=f"id:{key}", delivery_id=key, event="token_created", body="{}",
        headers={}, account="default", received_at=timezone.now() - age,
        processed_at=timezone.now() - age if status == "failed" else None,
        status=status, attempts=attempts,
    )  # fmt: skip


def test_every_step_runs_and_reports(fake_gateway, settings):
    for amount in (100, 200):
        fake_gateway.create_charge(amount=amount)
    token = fake_gateway.create_transaction_token("card")["id"]
    request = ChargeRequest.objects.create(
        params={"transaction_token_id": token, "amount": 300, "currency": "JPY"}
    )
    ChargeRequest.objects.filter(pk=request.pk).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )
    lost = _delivery("lost", age=timedelta(hours=1))
    fresh = _delivery("fresh", age=timedelta(seconds=1))  # a worker is about to take it
    retry = _delivery("retry", age=timedelta(hours=1), status="failed", attempts=1)
    ancient = _delivery("ancient", age=timedelta(days=400), status="processed", attempts=1)
    out = run("paycharge_periodic")
    assert [line.split(":")[0] for line in out.splitlines()] == [
        "sweep", "announcements", "recover", "sync", "payment_types", "prune",
    ]  # fmt: skip
    assert '"sent": 2' in out
    statuses = dict(WebhookDelivery.objects.values_list("delivery_id", "status"))
    assert statuses == {"lost": "ignored", "fresh": "received", "retry": "ignored"}
    assert not WebhookDelivery.objects.filter(pk=ancient.pk).exists()
    assert WebhookDelivery.objects.get(pk=fresh.pk).attempts == 0
    assert WebhookDelivery.objects.get(pk=retry.pk).attempts == 2
    assert ChargeRequest.objects.get(pk=request.pk).state == "succeeded"
    assert Charge.objects.count() == 3  # two synced, one recovered
    assert not Charge.objects.filter(payment_type="").exists()  # filled in
    del lost


def test_only_and_skip_choose_steps(fake_gateway):
    assert run("paycharge_periodic", "--only", "sweep").startswith("sweep:")
    out = run("paycharge_periodic", "--skip", "sync", "--skip", "payment_types")
    assert "sync" not in out and "prune" in out


def test_a_failing_step_leaves_the_others_running_and_fails_the_command(fake_gateway, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ACCOUNTS": {"other": {"SECRET": "s", "JWT": "not-a-jwt"}},
    }
    _delivery("lost", age=timedelta(hours=1))
    err = StringIO()
    with pytest.raises(CommandError, match="sync"):
        call_command("paycharge_periodic", stdout=StringIO(), stderr=err)
    assert "other" in err.getvalue()
    assert WebhookDelivery.objects.get().status == "ignored"  # the sweep ran anyway


def test_sync_all_accounts_goes_on_after_a_failing_account(fake_gateway, settings):
    fake_gateway.create_charge(amount=100)
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "ACCOUNTS": {"other": {"SECRET": "s", "JWT": "not-a-jwt"}},
    }
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="other"):
        call_command("paycharge_sync", "--all-accounts", "--charges", stdout=out, stderr=err)
    assert "Account default:" in out.getvalue() and "Charges: 1 read" in out.getvalue()
    assert "Account other failed" in err.getvalue()
    assert Charge.objects.count() == 1


def test_prune_refuses_a_bad_age_like_the_other_commands():
    with pytest.raises(CommandError, match="at least 1 day"):
        call_command("paycharge_prune_webhooks", "--older-than", "0")
