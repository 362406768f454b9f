"""Crash recovery: a real process creating a charge is SIGKILLed; paycharge_recover settles it."""

from __future__ import annotations

import json
import signal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_paycharge.models import Charge, ChargeRequest
from tests.waiting import fake_gateway_report, wait_until

from .conftest import child_env, run_child

POINTS = ("before_post", "after_post")
PAYMENT_TYPES = ("card", "konbini", "bank_transfer")


@pytest.mark.django_db(transaction=True)
def test_sigkill_around_the_post_then_recover_gives_one_charge(
    fake_gateway_server, settings, reliability_record
):
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(fake_gateway_server.settings())})
    damage = {"duplicate_charges": 0, "lost_charges": 0, "duplicate_rows": 0, "left_pending": 0}
    cases = 0
    for point in POINTS:
        for n, payment_type in enumerate(PAYMENT_TYPES):
            fake_gateway_server.reset()
            Charge.objects.all().delete()
            ChargeRequest.objects.all().delete()
            token = fake_gateway_server.create_transaction_token(payment_type)["id"]
            child = run_child("crash_child.py", [point, token, str(500 + n)], env)
            assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
            # The crash left exactly what it should: a committed request, marked as sent
            # with its outcome unknown (the POST may or may not have reached the gateway).
            request = ChargeRequest.objects.get()
            assert request.state == "unknown" and request.charge_id is None
            assert request.sent_at is not None
            assert Charge.objects.count() == 0
            assert len(fake_gateway_server.charges) == (1 if point == "after_post" else 0)

            call_command("paycharge_recover", "--older-than", "0")
            call_command("paycharge_recover", "--older-than", "0")  # a second run is harmless

            remote = len(fake_gateway_server.charges)
            local = Charge.objects.count()
            damage["duplicate_charges"] += max(0, remote - 1)
            damage["lost_charges"] += 1 if remote == 0 or local == 0 else 0
            damage["duplicate_rows"] += max(0, local - 1)
            request.refresh_from_db()
            damage["left_pending"] += request.state != "succeeded"
            if local == 1 and remote == 1:
                assert str(Charge.objects.get().gateway_id) in fake_gateway_server.charges
                assert Charge.objects.get().requested_amount == 500 + n
            cases += 1
    reliability_record(
        "Crash recovery (SIGKILL + paycharge_recover)",
        "a real child process SIGKILLed (1) after committing the charge request, before "
        "the POST and (2) after the POST succeeded, before storing the answer; "
        "3 payment types; real HTTP fake",
        cases,
        damage,
    )


@pytest.mark.django_db(transaction=True)
def test_sigkill_while_the_gateway_holds_the_key_then_recover_never_fails_it(
    fake_gateway_server, reliability_record
):
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(fake_gateway_server.settings())})
    damage = {"failed_while_in_progress": 0, "duplicate_charges": 0, "lost_charges": 0}
    cases = 0
    for n, payment_type in enumerate(PAYMENT_TYPES):
        fake_gateway_server.reset()
        Charge.objects.all().delete()
        ChargeRequest.objects.all().delete()
        token = fake_gateway_server.create_transaction_token(payment_type)["id"]
        # The create takes 3 s at the gateway; the child dies half a second into it.
        fake_gateway_server.add_fault("POST", r"^/charges$", action="latency", latency=3.0, count=1)
        child = run_child("crash_child.py", ["during_post", token, str(600 + n)], env)
        assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
        assert ChargeRequest.objects.get().state == "unknown"
        # The cron job runs while the gateway still works on it: asked, never guessed.
        with pytest.raises(CommandError, match="still pending"):
            call_command("paycharge_recover", "--older-than", "0", stdout=StringIO())
        request = ChargeRequest.objects.get()
        damage["failed_while_in_progress"] += request.state != "unknown"
        assert request.error is not None, request.state
        assert request.error["code"] == "IDEMPOTENCY_KEY_IN_PROGRESS", request.error
        wait_until(
            lambda: fake_gateway_server.charges,
            "the gateway to finish the killed child's create",
            diagnose=lambda: fake_gateway_report(fake_gateway_server),
        )
        call_command("paycharge_recover", "--older-than", "0", stdout=StringIO())
        remote, local = len(fake_gateway_server.charges), Charge.objects.count()
        request.refresh_from_db()
        damage["duplicate_charges"] += max(0, remote - 1)
        damage["lost_charges"] += remote != 1 or local != 1 or request.state != "succeeded"
        cases += 1
    reliability_record(
        "Crash while the gateway holds the key",
        "a real child process SIGKILLed 0.5 s into a create the gateway takes 3 s to finish; "
        "paycharge_recover runs while the key is in progress, then after; 3 payment types; "
        "real HTTP fake",
        cases,
        damage,
    )
