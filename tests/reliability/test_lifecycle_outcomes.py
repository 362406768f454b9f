"""Captures, cancels and refunds against a slow, forgetful, lossy gateway, and two staff at once.

Each row counts what would cost money or trust:

- ``refused though done``: a caller told "refused" (or any error that is not
  "unknown") for work the gateway did;
- ``done twice``: the gateway captured, canceled or refunded more than asked;
- ``beyond charge``: refunds adding up to more than the charge;
- ``not settled``: a request still open or unresolved once the gateway has
  finished and ``paycharge_recover`` has run;
- ``sent after abandoned``: a request sent again once it was abandoned;
- ``wrong left``: "left to refund" not what the gateway's refunds leave.

The fake's documented faults drive it: its ``latency`` fault longer than the
read time-out (the retries meet 409 ``IDEMPOTENCY_KEY_IN_PROGRESS``),
``drop_after`` (the work done, the answer lost), and its idempotency records
expiring (a resend then gets the documented refusals).
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import Charge, ChargeActionRequest
from tests.waiting import fake_gateway_report, wait_until

KINDS = ("capture", "cancel", "refund", "partial refund")
PATHS = {"capture": r"/capture$", "cancel": r"/cancels$"}
CHARGE = 1000
PARTIAL = 600

pytestmark = pytest.mark.django_db


def damage_counters() -> Counter[str]:
    names = ("refused_though_done", "done_twice", "beyond_charge", "not_settled", "errors")
    return Counter(dict.fromkeys(names, 0))


def new_charge(gateway: Any, kind: str) -> Charge:
    """A charge ready for ``kind``: authorized for a capture or a cancel, else paid."""
    token = gateway.create_transaction_token("card")["id"]
    authorized = kind in ("capture", "cancel")
    made = services.create_charge(
        transaction_token_id=token, amount=CHARGE, currency="JPY", capture=not authorized
    )
    return services.refresh_charge(made.gateway_id)


def act(kind: str, charge: Charge, key: str | None = None) -> Any:
    if kind == "capture":
        return services.capture_charge(charge, idempotency_key=key)
    if kind == "cancel":
        return services.cancel_charge(charge, idempotency_key=key)
    amount = PARTIAL if kind == "partial refund" else None
    return services.refund_charge(charge, amount=amount, idempotency_key=key)


def attempt(kind: str, charge: Charge, key: str | None = None) -> PayChargeError | None:
    """What the caller was told: None (done), or the error."""
    try:
        act(kind, charge, key)
    except PayChargeError as exc:
        return exc
    return None


def path_of(kind: str) -> str:
    return PATHS.get(kind, r"/refunds$")


def done_at_gateway(gateway: Any, kind: str, charge: Charge) -> int:
    """How many times the gateway did ``kind`` to the charge (captures, cancels, refunds)."""
    state = gateway.state
    cid = str(charge.gateway_id)
    with state.lock:
        if kind == "capture":
            return int(state.charges[cid].charged)
        if kind == "cancel":
            return len(state.charge_cancels.get(cid, ()))
        return len(state.charge_refunds.get(cid, ()))


def gateway_idle(gateway: Any) -> bool:
    """No request of the fake still holds its idempotency key (its work is finished)."""
    with gateway.state.lock:
        return all(r.response is not None for r in gateway.state.idempotency.values())


def refunded_at_gateway(gateway: Any, charge: Charge) -> int:
    state = gateway.state
    with state.lock:
        ids = state.charge_refunds.get(str(charge.gateway_id), ())
        return sum(state.refunds[r].amount for r in ids if state.refunds[r].status != "failed")


def posts(gateway: Any, kind: str) -> int:
    suffix = path_of(kind).strip("$").lstrip("/")
    return len(
        [r for r in gateway.requests_log if r["method"] == "POST" and r["path"].endswith(suffix)]
    )


def wait_for_gateway(gateway: Any, check: Any) -> None:
    """Until ``check()``: the fake's slow request, in a thread of its own, has finished."""
    wait_until(
        check,
        "the gateway to finish the slow request",
        every=0.02,
        diagnose=lambda: fake_gateway_report(gateway),
    )


def judge(
    gateway: Any, kind: str, charge: Charge, told: PayChargeError | None, damage: Counter[str]
) -> None:
    """After the gateway finished and recovery ran: count the damage of one case."""
    done = done_at_gateway(gateway, kind, charge)
    damage["done_twice"] += done > 1
    if told is not None and told.outcome != "unknown" and done:
        damage["refused_though_done"] += 1
    damage["beyond_charge"] += refunded_at_gateway(gateway, charge) > CHARGE
    request = ChargeActionRequest.objects.filter(charge=charge).order_by("created_at").first()
    # Settled means: succeeded when the gateway did it, failed when it did not.
    expected = "succeeded" if done else "failed"
    damage["not_settled"] += request is None or request.state != expected
    if kind.endswith("refund"):
        charge.refresh_from_db()
        left = CHARGE - refunded_at_gateway(gateway, charge)
        damage["wrong_left"] += services.refundable_amount(charge) != left


def slow(settings: Any, *, settle: float) -> None:
    """Reads time out after 0.1 s; the machine asks again for ``settle`` seconds."""
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TIMEOUT": (2.0, 0.1),
        "CREATE_SETTLE_SECONDS": settle,
    }


@pytest.mark.slow
def test_slow_lifecycle_requests_answered_in_the_end(fake_gateway, settings, reliability_record):
    """Slower than the read time-out, faster than the settle budget: one result, told once."""
    slow(settings, settle=5.0)
    damage, cases = damage_counters(), 0
    for kind in KINDS:
        for latency in (0.3, 0.7):
            charge = new_charge(fake_gateway, kind)
            fake_gateway.add_fault(
                "POST", path_of(kind), action="latency", latency=latency, count=1
            )
            key = f"slow-{uuid.uuid4()}"
            told = None
            try:
                first = act(kind, charge, key)
                again = act(kind, charge, key)  # the caller's own retry with its key
                damage["done_twice"] += getattr(first, "pk", 0) != getattr(again, "pk", 0)
            except PayChargeError as exc:
                told = exc
            wait_for_gateway(fake_gateway, lambda: gateway_idle(fake_gateway))  # its work is done
            services.recover_requests(older_than=timedelta(0))
            judge(fake_gateway, kind, charge, told, damage)
            damage["errors"] += told is not None
            cases += 1
    reliability_record(
        "Slow captures, cancels and refunds (409 in progress)",
        "the gateway takes 0.3 or 0.7 s, the client's read time-out is 0.1 s: its retries with "
        "the key meet 409 IDEMPOTENCY_KEY_IN_PROGRESS until the answer; the caller retries with "
        "its key; capture, cancel, full and partial refund; in-process fake",
        cases,
        damage,
    )


@pytest.mark.slow
def test_abandoned_then_a_late_success(fake_gateway, settings, reliability_record):
    """Slower than the whole settle budget: unknown (never "refused"), reserved, found later."""
    slow(settings, settle=0.3)
    damage, cases = damage_counters(), 0
    damage.update({"sent_after_abandoned": 0, "staff_told_refused": 0})
    for kind in KINDS:
        charge = new_charge(fake_gateway, kind)
        # Ten times the settle budget: a loaded host's slower attempts must not reach the
        # answer within the budget (a CI run at load did, at 1.2 s: four times it).
        fake_gateway.add_fault("POST", path_of(kind), action="latency", latency=3.0, count=1)
        key = f"late-{uuid.uuid4()}"
        told = attempt(kind, charge, key)
        damage["staff_told_refused"] += told is None or told.outcome != "unknown"
        sent = posts(fake_gateway, kind)
        if kind.endswith("refund"):
            charge.refresh_from_db()
            reserved = PARTIAL if kind == "partial refund" else CHARGE
            damage["wrong_left"] += services.refundable_amount(charge) != CHARGE - reserved
        try:  # the same key again: checked by reads, never sent again
            act(kind, charge, key)
        except PayChargeError as exc:
            damage["staff_told_refused"] += exc.outcome != "unknown"
        if kind == "refund":  # a second full refund with a new key: nothing is left
            try:
                act(kind, charge)
                damage["beyond_charge"] += 1
            except PayChargeError:
                pass
        wait_for_gateway(
            fake_gateway, lambda k=kind, c=charge: done_at_gateway(fake_gateway, k, c) > 0
        )
        services.recover_requests(older_than=timedelta(0))
        damage["sent_after_abandoned"] += posts(fake_gateway, kind) != sent
        judge(fake_gateway, kind, charge, told, damage)
        cases += 1
    reliability_record(
        "Abandonment, then a late success",
        "the gateway takes 3 s, the read time-out is 0.1 s and the settle budget 0.3 s: the "
        "request is abandoned and the caller told the outcome is unknown; the same key again, "
        "a second full refund with a new key; then paycharge_recover once the gateway is done",
        cases,
        damage,
    )


def test_lost_capture_and_cancel_answers(fake_gateway, reliability_record):
    damage, cases = damage_counters(), 0
    for drops in (1, 2, 3):
        for kind in ("capture", "cancel"):
            charge = new_charge(fake_gateway, kind)
            fake_gateway.add_fault("POST", path_of(kind), action="drop_after", count=drops)
            told = attempt(kind, charge)
            services.recover_requests(older_than=timedelta(0))
            judge(fake_gateway, kind, charge, told, damage)
            damage["errors"] += told is not None
            cases += 1
    reliability_record(
        "Lost capture and cancel answers",
        "the connection dropped after the gateway captured or canceled, 1-3 times in a row; "
        "the retries carry the same key; in-process fake",
        cases,
        damage,
    )


def test_documented_refusals_on_a_resend(fake_gateway, reliability_record):
    """The answer is lost and the gateway forgets the key before the resend: ALREADY_CAPTURED,
    CANCEL_NOT_ALLOWED, REFUND_EXCEEDS_CHARGE_AMOUNT say the first send did it."""
    damage, cases = damage_counters(), 0
    original = fake_gateway.state.faults.pick
    seen: list[str] = []

    def forgetting(method: str, path: str) -> Any:
        fault = original(method, path)
        if method == "POST" and "/charges/" in path:
            if seen and seen[-1] == path:
                fake_gateway.forget_idempotency_keys()  # expired before the resend
            seen.append(path)
        return fault

    fake_gateway.state.faults.pick = forgetting
    try:
        for kind in KINDS:
            charge = new_charge(fake_gateway, kind)
            fake_gateway.add_fault("POST", path_of(kind), action="drop_after", count=1)
            told = attempt(kind, charge)
            judge(fake_gateway, kind, charge, told, damage)
            damage["errors"] += told is not None
            cases += 1
    finally:
        fake_gateway.state.faults.pick = original
    reliability_record(
        "Documented refusals on a resend",
        "the answer lost after the gateway did the work, then its idempotency record expired: "
        "the resend is refused (ALREADY_CAPTURED, CANCEL_NOT_ALLOWED, "
        "REFUND_EXCEEDS_CHARGE_AMOUNT) and must be settled by reading; capture, cancel, full "
        "and partial refund",
        cases,
        damage,
    )
