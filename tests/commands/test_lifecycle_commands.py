"""paycharge_refund, paycharge_capture, paycharge_cancel and the recovery of their requests."""

from __future__ import annotations

import io
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_paycharge import services
from django_paycharge.models import ChargeActionRequest, Refund

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def charge(fake_gateway, **fields):
    token = fake_gateway.create_transaction_token("card")["id"]
    return services.create_charge(transaction_token_id=token, amount=1000, currency="JPY", **fields)


def test_refund_in_part_then_the_rest_with_a_reason(fake_gateway):
    paid = charge(fake_gateway)
    out = run("paycharge_refund", str(paid.gateway_id), "--amount", "250", "--reason", "fraud")
    assert "of ¥250: pending. Left to refund: ¥750." in out  # its answer
    out = run("paycharge_refund", str(paid.gateway_id), "--message", "the rest")
    assert "of ¥750: pending. Left to refund: ¥0." in out
    assert list(Refund.objects.order_by("amount").values_list("amount", flat=True)) == [250, 750]
    assert all(r.startswith("command") for r in ChargeActionRequest.objects.values_list(
        "requested_by", flat=True))  # fmt: skip


def test_running_again_with_the_same_key_refunds_once(fake_gateway):
    paid = charge(fake_gateway)
    for _ in range(2):
        run("paycharge_refund", str(paid.gateway_id), "--amount", "100", "--idempotency-key", "k1")
    assert len(fake_gateway.state.refunds) == 1


def test_refusals_are_one_line_errors(fake_gateway):
    authorized = charge(fake_gateway, capture=False)
    with pytest.raises(CommandError, match="Only a successful charge can be refunded"):
        run("paycharge_refund", str(authorized.gateway_id))
    with pytest.raises(CommandError, match="No charge"):
        run("paycharge_refund", str(uuid.uuid4()))
    with pytest.raises(CommandError, match="is not a charge id"):
        run("paycharge_cancel", "nope")


def test_capture_and_cancel(fake_gateway):
    first, second = charge(fake_gateway, capture=False), charge(fake_gateway, capture=False)
    out = run("paycharge_capture", str(first.gateway_id), "--amount", "600")
    assert f"Charge {first.gateway_id} captured (¥600): successful." in out
    out = run("paycharge_cancel", str(second.gateway_id))
    assert f"of charge {second.gateway_id}: successful." in out
    with pytest.raises(CommandError, match="Only an authorized charge can be captured"):
        run("paycharge_capture", str(second.gateway_id))


def test_a_refund_never_answered_is_reported_unknown_then_found_by_recover(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    paid = charge(fake_gateway)
    fake_gateway.add_fault("POST", r"/refunds$", action="drop_after", count=100)
    fake_gateway.add_fault("GET", r"/refunds$", action="drop_before", count=100)
    with pytest.raises(CommandError, match="do not refund again: it is being checked"):
        run("paycharge_refund", str(paid.gateway_id))
    assert len(fake_gateway.state.refunds) == 1  # the gateway did refund, once
    fake_gateway.clear_faults()
    out = run("paycharge_recover", "--older-than", "0")
    assert "found after abandonment: 1" in out and "  refund: found: 1" in out
    assert len(fake_gateway.state.refunds) == 1 and Refund.objects.count() == 1
    assert ChargeActionRequest.objects.get().state == "succeeded"
