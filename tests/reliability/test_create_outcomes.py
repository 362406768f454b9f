"""Every fault on every ask, then what a customer does next, then the recovery cron job.

For each fault the gateway gives on every attempt, a charge is created through
the service; the caller follows what the error says: a refusal may pay again
with a new token; "outcome unknown" checks again (``check_charge_request``)
and pays again only once the check says nothing was charged. Then
``paycharge_recover`` runs twice. Against the fake gateway's real HTTP server.

Counted: duplicate charges (more than one charge for one purchase), charges
made after the caller was told the request was over (what recovery used to
send), lost charges (made at the gateway, never mirrored or never linked), and
errors that were neither a charge nor one of the documented outcomes.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_paycharge import services
from django_paycharge.exceptions import ChargeOutcomeUnknownError, PayChargeError
from django_paycharge.models import Charge, ChargeRequest
from tests.waiting import wait_until

FAULTS: list[tuple[str, dict[str, Any]]] = [
    ("500", {"action": "status", "status": 500}),
    ("502", {"action": "status", "status": 502}),
    ("503", {"action": "status", "status": 503}),
    ("429", {"action": "status", "status": 429, "retry_after": 0}),
    ("reset before the work", {"action": "drop_before"}),
    ("reset after the work", {"action": "drop_after"}),
    ("half a body", {"action": "malformed"}),
    ("slower than the read time-out", {"action": "latency", "latency": 0.6}),
    ("400 (a refusal)", {"action": "status", "status": 400}),
]
PAYMENT_TYPES = ("card", "konbini", "bank_transfer")


@pytest.mark.django_db(transaction=True)
def test_every_fault_on_every_retry_then_a_new_token_then_recovery(
    fake_gateway_server: Any, settings: Any, reliability_record: Any
) -> None:
    gateway = fake_gateway_server
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TIMEOUT": (2.0, 0.3),
        # Longer than the slow create takes: a check says "not charged" only once the
        # gateway cannot be working on the request any more.
        "CHARGE_REQUEST_GRACE": 2,
    }
    damage = {"duplicate_charges": 0, "charged_after_told": 0, "lost_charges": 0, "errors": 0}
    outcomes: dict[str, int] = {}
    cases = 0
    for name, fault in FAULTS:
        for payment_type in PAYMENT_TYPES:
            gateway.reset()
            Charge.objects.all().delete()
            ChargeRequest.objects.all().delete()
            key = f"order-{cases}-pay-1"
            token = gateway.create_transaction_token(payment_type)["id"]
            gateway.add_fault("POST", r"^/charges$", **fault)
            outcome = "charged"
            try:
                services.create_charge(
                    transaction_token_id=token, amount=900, currency="JPY", idempotency_key=key
                )
            except ChargeOutcomeUnknownError:
                outcome = "unknown"
            except PayChargeError as exc:
                outcome = "refused" if exc.outcome == "refused" else "error"
            gateway.clear_faults()
            if outcome == "unknown":
                check = _settle_check(key)
                outcome = f"unknown, then {check.outcome}"
                pay_again = check.may_pay_again
            else:
                pay_again = outcome == "refused"
            told = set(gateway.charges)  # what exists when the caller has its final answer
            paid_again = set()
            if pay_again:  # the customer pays again, with a new token and a new attempt
                other = gateway.create_transaction_token(payment_type)["id"]
                again = services.create_charge(
                    transaction_token_id=other,
                    amount=900,
                    currency="JPY",
                    idempotency_key=key + "b",
                )
                paid_again = {str(again.gateway_id)}
            for _ in range(2):
                try:
                    call_command("paycharge_recover", "--older-than", "0", stdout=_Null())
                except CommandError:
                    damage["errors"] += 1
            remote = set(gateway.charges)
            local = {str(g) for g in Charge.objects.values_list("gateway_id", flat=True)}
            linked = {
                str(g) for g in ChargeRequest.objects.values_list("charge__gateway_id", flat=True)
            }
            damage["duplicate_charges"] += max(0, len(remote) - 1)
            damage["charged_after_told"] += len(remote - told - paid_again)
            damage["lost_charges"] += len(remote - local) + len(remote - linked)
            damage["errors"] += outcome == "error"
            outcomes[f"{name}: {outcome}"] = outcomes.get(f"{name}: {outcome}", 0) + 1
            cases += 1
    reliability_record(
        "Every fault on every retry, then a new token, then recovery",
        "500, 502, 503, 429, reset before/after the work, half a body, slower than the read "
        "time-out and a 400 on every attempt of a create; the caller follows the error "
        "(check again, pay with a new token only when told nothing was charged); "
        "paycharge_recover twice; 3 payment types; real HTTP fake",
        cases,
        damage,
        note="; ".join(f"{k} ({v})" for k, v in outcomes.items()),
    )


def _settle_check(key: str) -> Any:
    """Check again until the outcome is known (past the grace it always is)."""

    def known() -> Any:
        check = services.check_charge_request(key)
        assert check is not None
        return check if check.outcome != "unknown" else None

    return wait_until(
        known,
        f"the outcome of {key} to be known",
        every=0.1,
        diagnose=lambda: str(
            list(ChargeRequest.objects.values("idempotency_key", "state", "error"))
        ),
    )


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
