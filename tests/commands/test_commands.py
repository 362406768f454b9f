from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_paycharge import services
from django_paycharge.models import Charge, ChargeRequest, WebhookConfiguration

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_sync_without_flags_syncs_charges_and_webhooks(fake_gateway):
    fake_gateway.seed(120)
    fake_gateway.add_webhook("https://shop.example/payments/webhook/")
    out = run("paycharge_sync")
    assert "Charges: 120 read" in out and "created 120" in out
    assert "Webhook configurations: 1 read" in out
    assert Charge.objects.count() == 120
    assert WebhookConfiguration.objects.count() == 1


def test_sync_at_verbosity_0_prints_nothing_but_errors(fake_gateway, settings):
    fake_gateway.seed(120)
    fake_gateway.add_webhook("https://shop.example/payments/webhook/")
    out = run(
        "paycharge_sync", "--all-accounts", "--refunds", "--progress", "--max-pages", "1",
        "--fill-payment-types", "5", "-v", "0",
    )  # fmt: skip
    assert out == ""
    assert WebhookConfiguration.objects.count() == 1 and Charge.objects.count() == 100
    err = StringIO()
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "wrong-secret-0123456789"}
    with pytest.raises(CommandError):  # a failure is still said
        call_command("paycharge_sync", "--all-accounts", "-v", "0", stdout=StringIO(), stderr=err)
    assert "failed" in err.getvalue()


def test_sync_charges_only_then_an_incremental_run_reports_unchanged(fake_gateway):
    fake_gateway.seed(30)
    run("paycharge_sync", "--charges")
    out = run("paycharge_sync", "--charges", "--full")
    assert "created 0, updated 0, unchanged 30" in out
    assert WebhookConfiguration.objects.count() == 0


def test_progress_is_printed_for_long_runs(fake_gateway):
    fake_gateway.seed(5_050)
    out = run("paycharge_sync", "--charges")
    assert "50 pages, 5000 charges" in out


def test_sync_reads_windows_shows_progress_and_stops_at_a_page_budget(fake_gateway):
    fake_gateway.seed(350)
    out = run("paycharge_sync", "--charges", "--max-pages", "2", "--progress")
    assert "windows 0/1 done, 1 pages, 100 charges" in out
    assert "Stopped after 2 pages (--max-pages): the next sync goes on from there." in out
    out = run("paycharge_sync", "--charges", "--windows", "3")
    assert "Charges: 150 read" in out
    assert Charge.objects.count() == 350


def test_a_second_sync_of_the_account_exits_with_a_clear_message(fake_gateway):
    from django_paycharge.services.sync.lock import account_lock

    with account_lock("default"), pytest.raises(CommandError) as refused:
        run("paycharge_sync", "--charges")
    assert "Another sync of account default is running" in str(refused.value)
    assert "--wait" in str(refused.value)
    with account_lock("default"), pytest.raises(CommandError):
        run("paycharge_sync", "--charges", "--wait", "0.3")  # waited, still held


def test_fill_payment_types_after_a_sync(fake_gateway):
    fake_gateway.seed(40)
    out = run("paycharge_sync", "--charges", "--fill-payment-types", "100")
    assert "Payment types filled in for 40 charges." in out
    assert not Charge.objects.filter(payment_type="").exists()


def test_bad_credentials_are_one_clear_line(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "wrong-secret"}
    with pytest.raises(CommandError, match="rejected the credentials") as info:
        run("paycharge_sync", "--charges")
    assert "wrong-secret" not in str(info.value)


def test_an_unreachable_gateway_is_one_clear_line(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": "http://127.0.0.1:9", "MAX_RETRIES": 0}
    with pytest.raises(CommandError, match="could not be reached"):
        run("paycharge_sync", "--charges")


def test_a_bad_since_is_refused(fake_gateway):
    with pytest.raises(CommandError, match="ISO-8601"):
        run("paycharge_sync", "--since", "yesterday")


def test_since_starts_from_that_time(fake_gateway):
    fake_gateway.seed(200)
    newest = sorted(c["created_on"] for c in fake_gateway.charges.values())[-10]
    out = run("paycharge_sync", "--charges", "--since", newest)
    assert "Charges: 10 read" in out


def test_unknown_account_is_a_clear_error(fake_gateway):
    with pytest.raises(CommandError, match="No account named 'nope'"):
        run("paycharge_sync", "--account", "nope")


def test_recover_settles_pending_requests_and_reports(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    ChargeRequest.objects.create(
        params={"transaction_token_id": token, "amount": 100, "currency": "JPY"}
    )
    ChargeRequest.objects.update(
        created_at=ChargeRequest.objects.get().created_at - timedelta(seconds=60)
    )
    young = ChargeRequest.objects.create(params={"amount": 100, "currency": "JPY"})
    out = run("paycharge_recover")
    assert "settled: 1, failed: 0, still pending: 0, abandoned: 0" in out
    assert "left alone: 1 younger than 30 s" in out
    assert len(fake_gateway.charges) == 1
    assert ChargeRequest.objects.get(pk=young.pk).state == ChargeRequest.State.PENDING


def test_recover_abandons_requests_past_the_maximum_age_and_names_them(fake_gateway, capsys):
    token = fake_gateway.create_transaction_token("card")["id"]
    request = ChargeRequest.objects.create(
        caller_key="order-9-pay-1",
        params={"transaction_token_id": token, "amount": 100, "currency": "JPY"},
    )
    ChargeRequest.objects.update(created_at=request.created_at - timedelta(seconds=120))
    out = run("paycharge_recover", "--max-age", "60")
    assert "settled: 0, failed: 0, still pending: 0, abandoned: 1" in out
    assert "Abandoned request order-9-pay-1" in capsys.readouterr().err
    request.refresh_from_db()
    assert request.state == "abandoned" and request.error is not None
    assert request.error["abandoned"] == "max_age"
    assert request.error["outcome"] == "not_charged"  # never sent
    assert len(fake_gateway.charges) == 0  # never sent, then or later
    run("paycharge_recover", "--older-than", "0")
    assert len(fake_gateway.charges) == 0


def test_recover_fails_when_requests_stay_pending(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    token = fake_gateway.create_transaction_token("card")["id"]
    ChargeRequest.objects.create(
        params={"transaction_token_id": token, "amount": 100, "currency": "JPY"}
    )
    fake_gateway.add_fault("POST", r"^/charges$", action="status", status=503, count=5)
    with pytest.raises(CommandError, match="still pending"):
        run("paycharge_recover", "--older-than", "0")


def test_webhook_sync_against_an_unchanged_gateway_reports_unchanged(fake_gateway):
    fake_gateway.add_webhook("https://shop.example/payments/webhook/")
    assert "created 1, updated 0, unchanged 0" in run("paycharge_sync", "--webhooks")
    for _ in range(2):
        assert "created 0, updated 0, unchanged 1" in run("paycharge_sync", "--webhooks")


def test_sync_subscriptions_reads_them_and_the_renewals_of_those_that_changed(fake_gateway):
    token = fake_gateway.create_transaction_token(type="subscription")["id"]
    made = services.create_subscription(
        transaction_token_id=token, amount=1000, currency="JPY", period="monthly"
    )
    fake_gateway.move_clock(timedelta(days=32))  # a renewal, its webhook never heard
    out = run("paycharge_sync", "--webhooks", "--subscriptions")
    assert "Subscriptions: 1 read, 1 changed, 2 of their charges read, 0 quarantined." in out
    assert made.charges().count() == 2
    again = run("paycharge_sync", "--webhooks", "--subscriptions")
    assert "Subscriptions: 1 read, 0 changed, 0 of their charges read" in again
