"""``services.payment_attempt_key``: an order's checkout made exactly once by one call."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.db import connection

from django_paycharge import services
from django_paycharge.exceptions import (
    ChargeOutcomeUnknownError,
    IdempotencyKeyReusedError,
    PayChargeError,
)
from django_paycharge.models import Charge, ChargeRequest
from django_paycharge.testing import CARD_DECLINED


def pay(order: Any, token: str) -> Charge:
    """A shop's checkout: the attempt's key, then the charge."""
    key = services.payment_attempt_key(order)
    return services.create_charge(
        transaction_token_id=token, amount=500, currency="JPY", idempotency_key=key
    )


@pytest.mark.django_db
def test_an_order_keeps_its_attempt_until_that_attempt_charged_nothing(fake_gateway):
    assert services.payment_attempt_key("A-1") == "A-1-pay-1"
    refused = uuid.uuid4()  # a token the gateway does not know: refused, nothing charged
    with pytest.raises(PayChargeError) as info:
        pay("A-1", str(refused))
    assert info.value.outcome == "refused"
    assert services.payment_attempt_key("A-1") == "A-1-pay-2"  # the refusal lets the next through

    declined_token = fake_gateway.create_transaction_token("card", card_number=CARD_DECLINED)
    declined = pay("A-1", declined_token["id"])
    declined = services.wait_for_charge(declined, timeout=5)
    assert declined.status == "failed"
    assert services.payment_attempt_key("A-1") == "A-1-pay-3"  # its charge took no money

    charge = pay("A-1", fake_gateway.create_transaction_token("card")["id"])
    assert services.payment_attempt_key("A-1") == "A-1-pay-3"  # it charged: no new attempt
    with pytest.raises(IdempotencyKeyReusedError):  # a second tab with another card
        pay("A-1", fake_gateway.create_transaction_token("card")["id"])
    assert str(charge.gateway_id) in fake_gateway.charges
    assert len(fake_gateway.charges) == 2  # the declined one and the paid one
    assert services.payment_attempt_key("A-10") == "A-10-pay-1"  # another order's own count


@pytest.mark.django_db
def test_a_model_instance_is_keyed_as_idempotency_key_for_keys_it(fake_gateway):
    order = ChargeRequest.objects.create(params={})  # any saved model stands for the order
    assert services.payment_attempt_key(order) == services.idempotency_key_for(order, 1)
    ChargeRequest.objects.create(
        params={}, caller_key=services.idempotency_key_for(order, 1), state="failed"
    )
    assert services.payment_attempt_key(order) == services.idempotency_key_for(order, 2)
    with pytest.raises(ValueError):
        services.payment_attempt_key(ChargeRequest(params={}))  # not saved: no key
    with pytest.raises(ValueError):
        services.payment_attempt_key("")


@pytest.mark.django_db
def test_attempts_beyond_a_batch_are_found(fake_gateway):
    for n in range(1, 20):
        ChargeRequest.objects.create(params={}, caller_key=f"B-7-pay-{n}", state="failed")
    assert services.payment_attempt_key("B-7") == "B-7-pay-20"


@pytest.mark.django_db
def test_while_the_last_attempt_is_unknown_no_new_attempt_starts(fake_gateway, settings):
    fake_gateway.add_fault("POST", r"^/charges$", action="status", status=503)
    with pytest.raises(ChargeOutcomeUnknownError):
        pay("C-3", fake_gateway.create_transaction_token("card")["id"])
    with pytest.raises(ChargeOutcomeUnknownError) as info:
        services.payment_attempt_key("C-3")  # the charge may exist: paying again could double
    assert info.value.outcome == "unknown"
    # Past the grace with nothing found at the gateway: nothing was charged, pay again.
    settings.PAYCHARGE = {**settings.PAYCHARGE, "CHARGE_REQUEST_GRACE": 0}
    assert services.payment_attempt_key("C-3") == "C-3-pay-2"
    fake_gateway.clear_faults()
    assert pay("C-3", fake_gateway.create_transaction_token("card")["id"]).status != "failed"
    assert len(fake_gateway.charges) == 1


def run_together(*calls: Any) -> list[Any]:
    """Each call on its own thread, started together; results or exceptions, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i](barrier)
        except Exception as exc:  # the test asserts on it
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("after_a_refusal", [False, True], ids=["first", "after-refusal"])
def test_two_concurrent_checkouts_of_one_order_make_one_charge(
    fake_gateway_server, after_a_refusal
):
    order = "D-9"
    if after_a_refusal:
        with pytest.raises(PayChargeError):
            pay(order, str(uuid.uuid4()))
    tokens = [fake_gateway_server.create_transaction_token("card")["id"] for _ in range(2)]

    def checkout(token: str) -> Any:
        def run(barrier: threading.Barrier) -> Charge:
            barrier.wait()
            key = services.payment_attempt_key(order)
            barrier.wait()  # both chose before either charges: the race at its widest
            return services.create_charge(
                transaction_token_id=token, amount=500, currency="JPY", idempotency_key=key
            )

        return run

    results = run_together(checkout(tokens[0]), checkout(tokens[1]))
    charges = [r for r in results if isinstance(r, Charge)]
    refused = [r for r in results if isinstance(r, IdempotencyKeyReusedError)]
    assert len(charges) == 1 and len(refused) == 1, results
    assert len(fake_gateway_server.state.charges) == 1
    assert Charge.objects.count() == 1
    expected = f"{order}-pay-{2 if after_a_refusal else 1}"
    assert ChargeRequest.objects.get(charge__isnull=False).caller_key == expected
