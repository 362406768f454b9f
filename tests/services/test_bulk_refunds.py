"""refund_many: every charge of a batch refunded once, paced, resumed after a crash."""

from __future__ import annotations

from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.client.resources.refunds_cancels import Refunds
from django_paycharge.exceptions import InvalidParametersError
from django_paycharge.models import Charge, ChargeActionRequest
from django_paycharge.services import bulk_refunds
from django_paycharge.testing import CARD_DECLINED

pytestmark = pytest.mark.django_db


class Clock:
    """A clock that moves only when slept on (or told to), recording each sleep."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def paid(
    fake_gateway, event: str = "E42", amount: int = 1000, *, synced: bool = True, **fields: Any
) -> Charge:
    """A charge of the event; ``synced``: the mirror knows how it ended (as after a sync)."""
    token = fake_gateway.create_transaction_token("card", **fields)["id"]
    charge = services.create_charge(
        transaction_token_id=token, amount=amount, currency="JPY", metadata={"event": event}
    )
    return services.refresh_charge(charge.gateway_id) if synced else charge


def refunds_per_charge(fake_gateway, charges: list[Charge]) -> list[int]:
    return [len(fake_gateway.state.charge_refunds[str(c.gateway_id)]) for c in charges]


def refund_posts(fake_gateway) -> int:
    log = fake_gateway.requests_log
    return sum(1 for r in log if r["method"] == "POST" and r["path"].endswith("/refunds"))


def refund_many(**kwargs: Any) -> services.RefundManyResult:
    clock = kwargs.pop("clock", None) or Clock()
    charges = services.batch_charges(metadata={"event": "E42"})
    return services.refund_many(charges, clock=clock, sleep=clock.sleep, **kwargs)


def test_every_charge_of_the_event_is_refunded_what_is_left(fake_gateway):
    # Pending in the mirror as the create answered: the machine reads each before it decides.
    charges = [paid(fake_gateway, amount=1000 + i, synced=False) for i in range(3)]
    other = paid(fake_gateway, event="E43")
    services.refund_charge(charges[0], amount=400)
    result = refund_many(batch="e42", reason="customer_request")
    assert result.counts == {"refunded": 3} and result.left == 0 and result.ok
    assert result.amounts == {"JPY": 600 + 1001 + 1002}
    assert [services.refundable_amount(c) for c in [*charges, other]] == [0, 0, 0, 1000]
    keys = ChargeActionRequest.objects.filter(requested_by="").values_list(
        "idempotency_key", flat=True
    )
    assert {f"refund-many:e42:{c.gateway_id}" for c in charges} <= set(keys)


def test_a_crash_after_the_gateway_answered_resumes_without_refunding_twice(
    fake_gateway, monkeypatch
):
    charges = [paid(fake_gateway) for _ in range(5)]
    create = Refunds.create
    answered: list[object] = []

    def crash_on_the_third(self: Refunds, *args: Any, **kwargs: Any) -> Any:
        made = create(self, *args, **kwargs)  # the gateway has refunded
        answered.append(made)
        if len(answered) == 3:
            raise KeyboardInterrupt  # killed before the answer is stored
        return made

    monkeypatch.setattr(Refunds, "create", crash_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        refund_many(batch="e42")
    monkeypatch.undo()
    assert refunds_per_charge(fake_gateway, charges) == [1, 1, 1, 0, 0]
    assert ChargeActionRequest.objects.filter(state="unknown").count() == 1
    resumed = refund_many(batch="e42")
    assert resumed.counts == {"done_before": 3, "refunded": 2}
    assert resumed.amounts == {"JPY": 5000}
    assert refunds_per_charge(fake_gateway, charges) == [1, 1, 1, 1, 1]
    posts = refund_posts(fake_gateway)
    again = refund_many(batch="e42")  # a third run: every answer from the mirror
    assert again.counts == {"done_before": 5} and refund_posts(fake_gateway) == posts
    assert refunds_per_charge(fake_gateway, charges) == [1, 1, 1, 1, 1]


def test_refunds_are_paced_at_the_rate_and_skipped_charges_take_no_turn(fake_gateway):
    for _ in range(4):
        paid(fake_gateway)
    paid(fake_gateway, card_number=CARD_DECLINED)
    clock = Clock()
    result = refund_many(batch="paced", rate=4, clock=clock)
    assert result.counts == {"refunded": 4, "skipped": 1}
    assert clock.slept == [0.25, 0.25, 0.25]  # the refunds took no time on this clock


def test_no_pause_when_a_refund_took_longer_than_its_turn(fake_gateway, monkeypatch):
    for _ in range(3):
        paid(fake_gateway)
    clock = Clock()
    create = Refunds.create

    def slow(self: Refunds, *args: Any, **kwargs: Any) -> Any:
        clock.now += 0.6
        return create(self, *args, **kwargs)

    monkeypatch.setattr(Refunds, "create", slow)
    assert refund_many(batch="slow", rate=2, clock=clock).counts == {"refunded": 3}
    assert clock.slept == []


def test_a_429_makes_the_client_wait_for_its_retry_after(fake_gateway, monkeypatch):
    charges = [paid(fake_gateway) for _ in range(3)]
    slept: list[float] = []
    # The client's own wait (Retry-After, and the pause every request of it then keeps).
    monkeypatch.setattr(services.get_client()._transport, "sleep", slept.append)
    fake_gateway.add_fault(
        "POST", r"/refunds$", action="status", status=429, retry_after=7, count=1
    )
    result = refund_many(batch="limited")
    assert result.counts == {"refunded": 3}
    assert slept[0] == 7  # the refund was sent again after the gateway's Retry-After
    assert len(slept) > 1 and all(0 < s <= 7 for s in slept)  # later requests paused too
    assert refund_posts(fake_gateway) == 4
    assert refunds_per_charge(fake_gateway, charges) == [1, 1, 1]


def test_charges_that_cannot_be_refunded_are_skipped_and_one_failure_does_not_stop(
    fake_gateway,
):
    good = [paid(fake_gateway) for _ in range(2)]
    declined = paid(fake_gateway, card_number=CARD_DECLINED)
    token = fake_gateway.create_transaction_token("card")["id"]
    authorized = services.create_charge(
        transaction_token_id=token, amount=500, currency="JPY", capture=False,
        metadata={"event": "E42"},
    )  # fmt: skip
    konbini_token = fake_gateway.create_transaction_token("konbini")["id"]
    konbini = services.create_charge(
        transaction_token_id=konbini_token, amount=500, currency="JPY", metadata={"event": "E42"}
    )
    Charge.objects.filter(pk=konbini.pk).update(status="successful", payment_type="konbini")
    refunded = paid(fake_gateway)
    services.refund_charge(refunded)
    refused = paid(fake_gateway)
    fake_gateway.add_fault(
        "POST", rf"/charges/{refused.gateway_id}/refunds$", action="status", status=400
    )
    steps: list[bulk_refunds.RefundStep] = []
    result = refund_many(batch="mixed", progress=lambda step, _: steps.append(step))
    assert result.counts == {"refunded": 2, "skipped": 4, "failed": 1} and not result.ok
    why = {s.charge.pk: s.detail for s in steps if s.outcome != "refunded"}
    assert "its status is failed" in why[declined.pk]
    assert "its status is authorized" in why[authorized.pk]
    assert "cannot be refunded" in why[konbini.pk]
    assert "Nothing is left" in why[refunded.pk]
    assert refused.pk in why
    assert refunds_per_charge(fake_gateway, good) == [1, 1]


def test_a_dry_run_sends_nothing(fake_gateway):
    paid(fake_gateway)
    paid(fake_gateway, amount=300)
    paid(fake_gateway, card_number=CARD_DECLINED)
    result = refund_many(batch="dry", dry_run=True)
    assert result.counts == {"would_refund": 2, "skipped": 1}
    assert result.amounts == {"JPY": 1300}
    assert refund_posts(fake_gateway) == 0 and not ChargeActionRequest.objects.exists()


def test_a_request_not_sent_is_made_again_under_the_next_key(fake_gateway):
    charge = paid(fake_gateway)
    fake_gateway.add_fault("POST", r"/refunds$", action="status", status=403, count=1)
    assert refund_many(batch="again").counts == {"failed": 1}
    assert ChargeActionRequest.objects.get().state == "not_sent"
    assert refund_many(batch="again").counts == {"refunded": 1}
    keys = ChargeActionRequest.objects.order_by("pk").values_list("idempotency_key", flat=True)
    first = f"refund-many:again:{charge.gateway_id}"
    assert list(keys) == [first, f"{first}:2"]
    assert refunds_per_charge(fake_gateway, [charge]) == [1]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"batch": "a:b"}, "batch"), ({"batch": "ok", "rate": 0}, "rate"),
     ({"batch": "ok", "reason": "bored"}, "reason")],
)  # fmt: skip
def test_bad_arguments_are_refused_before_anything_is_sent(fake_gateway, kwargs, field):
    paid(fake_gateway)
    with pytest.raises(InvalidParametersError) as refused:
        refund_many(**kwargs)
    assert [e.field for e in refused.value.errors] == [field]
    assert refund_posts(fake_gateway) == 0


def test_metadata_matches_text_or_the_number_it_spells(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    numbered = services.create_charge(
        transaction_token_id=token, amount=100, currency="JPY", metadata={"event": 42}
    )
    assert list(services.batch_charges(metadata={"event": "42"})) == [numbered]
    with pytest.raises(InvalidParametersError):
        services.batch_charges(metadata={"event__gt": "1"})


def test_a_refund_never_answered_is_unknown_then_found_never_sent_again(fake_gateway, settings):
    charges = [paid(fake_gateway) for _ in range(2)]
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0, "CREATE_SETTLE_SECONDS": 0}
    lost = rf"/charges/{charges[0].gateway_id}/refunds$"
    fake_gateway.add_fault("POST", lost, action="drop_after", count=100)  # made, answer lost
    fake_gateway.add_fault("GET", lost, action="drop_before", count=100)  # nor found by reads
    first = refund_many(batch="lost")
    assert first.counts == {"unknown": 1, "refunded": 1} and not first.ok
    assert ChargeActionRequest.objects.filter(state="abandoned").count() == 1
    again = refund_many(batch="lost")  # still not readable: still unknown, nothing sent
    assert again.counts == {"unknown": 1, "done_before": 1}
    fake_gateway.clear_faults()
    found = refund_many(batch="lost")  # readable again: the machine finds the refund
    assert found.counts == {"done_before": 2} and found.amounts == {"JPY": 2000}
    assert refunds_per_charge(fake_gateway, charges) == [1, 1]


def test_batch_names_differing_in_case_are_two_batches(fake_gateway):
    charge = paid(fake_gateway, amount=1000)
    services.refund_charge(
        charge, amount=100, idempotency_key=f"refund-many:e42:{charge.gateway_id}"
    )
    assert refund_many(batch="E42").counts == {"refunded": 1}  # not e42's refund
    assert refund_many(batch="e42").counts == {"done_before": 1}
    assert refunds_per_charge(fake_gateway, [charge]) == [2]
