"""Lost responses on refunds: the gateway refunds, then the answer never arrives (1-3 times).

Two ways back: the retries with the same key (the answer comes on a later
attempt), or, when every attempt is lost, abandonment (the amount stays
reserved) and ``paycharge_recover`` finding the refund by reads. Either way:
one remote refund, one local row, one key, the right amount left to refund,
and never a refusal reported for a refund the gateway made.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.exceptions import ActionOutcomeUnknownError, PayChargeError
from django_paycharge.models import Charge, ChargeActionRequest, Refund

pytestmark = pytest.mark.django_db

AMOUNTS = (None, 400)  # all that is left, and a part


def _refund_posts(gateway) -> list[dict[str, Any]]:
    return [
        r for r in gateway.requests_log if r["method"] == "POST" and r["path"].endswith("/refunds")
    ]


def _run_cases(gateway, settings, *, recover: bool) -> tuple[int, dict[str, int]]:
    damage = {
        "extra_remote_refunds": 0,
        "extra_local_rows": 0,
        "extra_keys": 0,
        "wrong_amount_left": 0,
        "refused_though_done": 0,
        "errors": 0,
    }
    cases = 0
    for amount in AMOUNTS:
        for drops in (1, 2, 3):
            gateway.reset()
            Charge.objects.all().delete()
            token = gateway.create_transaction_token("card")["id"]
            charge = services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")
            try:
                if recover:
                    _lost_until_recovered(gateway, charge, amount, drops)
                else:
                    gateway.add_fault("POST", r"/refunds$", action="drop_after", count=drops)
                    services.refund_charge(charge, amount=amount)
            except PayChargeError as exc:
                damage["refused_though_done"] += exc.outcome == "refused"
                damage["errors"] += 1
                continue
            posts = _refund_posts(gateway)
            if not recover:
                assert len(posts) == drops + 1, (amount, drops, len(posts))
            damage["extra_remote_refunds"] += abs(len(gateway.state.refunds) - 1)
            damage["extra_local_rows"] += abs(Refund.objects.count() - 1)
            damage["extra_keys"] += abs(len({p["headers"]["idempotency-key"] for p in posts}) - 1)
            charge.refresh_from_db()
            expected_left = 1000 - (amount or 1000)
            damage["wrong_amount_left"] += services.refundable_amount(charge) != expected_left
            assert ChargeActionRequest.objects.get().state == "succeeded"
            cases += 1
    return cases, damage


def _lost_until_recovered(gateway, charge, amount, drops) -> None:
    """Every answer lost, and every read too: abandoned (the amount stays reserved), then
    ``paycharge_recover``'s reads are lost ``drops - 1`` times before one gets through."""
    gateway.add_fault("POST", r"/refunds$", action="drop_after", count=1000)
    gateway.add_fault("GET", r"/refunds$", action="drop_before", count=1000)
    with pytest.raises(ActionOutcomeUnknownError):
        services.refund_charge(charge, amount=amount)
    charge.refresh_from_db()
    assert services.refundable_amount(charge) == 1000 - (amount or 1000)  # reserved
    gateway.clear_faults()
    gateway.add_fault("GET", r"/refunds$", action="drop_before", count=drops - 1)
    for _ in range(drops):  # each run of paycharge_recover may be lost too
        services.recover_requests(older_than=timedelta(0))


def test_lost_refund_responses_in_process(fake_gateway, settings, reliability_record):
    cases, damage = _run_cases(fake_gateway, settings, recover=False)
    assert cases == len(AMOUNTS) * 3
    reliability_record(
        "Lost refund responses (in-process fake)",
        "connection dropped after the refund is made, 1-3 times in a row; full and partial "
        "refunds; the client's retries carry the same key",
        cases,
        damage,
    )


def test_lost_refund_responses_settled_by_recover(fake_gateway, settings, reliability_record):
    cases, damage = _run_cases(fake_gateway, settings, recover=True)
    assert cases == len(AMOUNTS) * 3
    reliability_record(
        "Lost refund responses, every attempt lost (abandoned, found by paycharge_recover)",
        "every answer and every read of the refund lost until the request is abandoned (the "
        "amount stays reserved), then 0-2 recovery reads lost; full and partial refunds; "
        "never sent again",
        cases,
        damage,
    )


@pytest.mark.django_db(transaction=True)
def test_lost_refund_responses_over_real_http(fake_gateway_server, settings, reliability_record):
    cases, damage = _run_cases(fake_gateway_server, settings, recover=False)
    assert cases == len(AMOUNTS) * 3
    reliability_record(
        "Lost refund responses (real HTTP fake)",
        "server closes the socket after making the refund, 1-3 times in a row; full and partial",
        cases,
        damage,
    )
