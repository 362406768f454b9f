"""Lost responses: the gateway creates the charge, then the answer never arrives (1-3 times)."""

from __future__ import annotations

import pytest

from django_paycharge import services
from django_paycharge.models import Charge, ChargeRequest

pytestmark = pytest.mark.django_db

PAYMENT_TYPES = ("card", "konbini", "bank_transfer", "online")


def _run_cases(gateway, front_end: str) -> tuple[int, dict[str, int]]:
    damage = {"extra_remote_charges": 0, "extra_local_rows": 0, "extra_keys": 0, "errors": 0}
    cases = 0
    for payment_type in PAYMENT_TYPES:
        for drops in (1, 2, 3):
            gateway.reset()
            Charge.objects.all().delete()
            ChargeRequest.objects.all().delete()
            token = gateway.create_transaction_token(payment_type)["id"]
            gateway.add_fault("POST", r"^/charges$", action="drop_after", count=drops)
            try:
                charge = services.create_charge(
                    transaction_token_id=token, amount=100 + drops, currency="JPY"
                )
            except Exception:
                damage["errors"] += 1
                continue
            keys = {
                r["headers"]["idempotency-key"]
                for r in gateway.requests_log
                if r["method"] == "POST" and r["path"] == "/charges"
            }
            posts = sum(
                1 for r in gateway.requests_log if r["method"] == "POST" and r["path"] == "/charges"
            )
            assert posts == drops + 1, (front_end, payment_type, drops, posts)
            damage["extra_remote_charges"] += abs(len(gateway.charges) - 1)
            damage["extra_local_rows"] += abs(Charge.objects.count() - 1)
            damage["extra_keys"] += abs(len(keys) - 1)
            assert str(charge.gateway_id) in gateway.charges
            assert ChargeRequest.objects.get().state == "succeeded"
            cases += 1
    return cases, damage


def test_lost_responses_in_process(fake_gateway, reliability_record):
    cases, damage = _run_cases(fake_gateway, "in-process")
    assert cases == len(PAYMENT_TYPES) * 3
    reliability_record(
        "Lost create responses (in-process fake)",
        "connection dropped after the charge is created, 1-3 times in a row; 4 payment types",
        cases,
        damage,
    )


@pytest.mark.django_db(transaction=True)
def test_lost_responses_over_real_http(fake_gateway_server, reliability_record):
    cases, damage = _run_cases(fake_gateway_server, "http")
    assert cases == len(PAYMENT_TYPES) * 3
    reliability_record(
        "Lost create responses (real HTTP fake)",
        "server closes the socket after creating the charge, 1-3 times in a row; 4 payment types",
        cases,
        damage,
    )
