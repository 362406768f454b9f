"""Invariants of the mirror and the money requests, as a Hypothesis state machine.

Rules drive the real code paths against the in-process fake gateway: charges
created (their answer lost sometimes) and paid or failed at the gateway;
refunds through ``services.refund_charge`` answered, refused, lost then found
by a read, lost and left unread (abandoned), never sent, or committed and the
process dead before the send; cancels through ``services.cancel_charge``; the
gateway finishing or failing a refund, or finishing a cancel, later; its
webhook deliveries stored and processed through the webhooks service in any
order, twice, or without their id; bulk syncs and a charge's refunds read;
recovery of open and abandoned requests; late answers (a stale refund or
charge read stored after a newer one). The fake keeps charges, refunds and
cancels pending until a rule moves them (``processing_delay``), so every
interleaving is the machine's choice.

Invariants, checked on the database rows after every step:

- a charge's and a refund's status never move backwards (the app's own ranks,
  ``status_rank`` and ``operation_rank``), whatever order the answers come in,
  and a charge's final status changes only to ``canceled`` (a payment voided);
- what is left to refund (``refundable_amount``) is never negative, never
  more than the charged amount less the refunds the mirror knows to use it up,
  nor more than the gateway would accept; nor do the mirror's refunds ever add
  up to more than the charged amount;
- a charge's ``refunds_total`` is the sum of its successful refunds; and once
  its refunds are read again (the ``reconcile`` rule), the gateway's sum.

The tests at the end plant one defect each and show the machine fails on it.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import responses
from django.test import override_settings
from hypothesis import HealthCheck, currently_in_test_context, event
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from django_paycharge import services
from django_paycharge.client import Charge as RemoteCharge
from django_paycharge.client.lifecycle_parsing import parse_refund
from django_paycharge.client.lifecycle_types import Refund as RemoteRefund
from django_paycharge.client.vocabulary import (
    CANCEL_EVENT,
    FINAL_STATUSES,
    REFUND_EVENT,
    REFUND_NOT_ALLOWED,
    REFUND_NOT_WITHIN_BOUNDS,
    operation_rank,
    status_rank,
)
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import (
    COUNTED_REFUND_STATUSES,
    Charge,
    ChargeActionRequest,
    ChargeRequest,
    Refund,
    SyncCheckpoint,
    WebhookDelivery,
)
from django_paycharge.models.compiled import Compiled
from django_paycharge.services.lifecycle import REFUND, refundable_amounts
from django_paycharge.services.lifecycle.requests import open_request
from django_paycharge.services.mirror import store_refund
from django_paycharge.services.sync import sync_charge_children
from django_paycharge.services.webhooks import process_delivery, store_delivery
from django_paycharge.testing import ApiError
from django_paycharge.testing.pytest_plugin import InProcessGateway
from django_paycharge.testing.responses_frontend import ResponsesFrontend
from tests.hypothesis_profiles import examples

AMOUNT = 1000
#: Long enough that the fake's own timers never finish a charge or refund during a test.
HELD = 3600.0
REFUND_POSTS = r"/refunds$"
REFUND_MODES = ("answered", "answered", "refused", "lost", "lost_unread", "not_sent", "crash")
SYNCS = ("charges", "charges_full", "refunds", "refunds_of_one")
PAYMENTS = ("pays", "pays", "pays", "fails", "later")
#: All that is left (None), round amounts that add up to the charge, and any amount.
AMOUNTS = st.one_of(
    st.none(), st.sampled_from([100, 250, 400, 500, AMOUNT]), st.integers(1, AMOUNT)
)


#: What the rules met, by kind (a look at how far the machine gets).
MET: Counter[str] = Counter()


def note(what: str) -> None:
    MET[what] += 1
    if currently_in_test_context():  # not in the replays of the planted defects
        event(what)


class MirrorMoney(RuleBasedStateMachine):
    """Charges and refunds at the gateway and in the mirror, under any order of answers."""

    charges = Bundle("charges")

    def __init__(self) -> None:
        super().__init__()
        for model in (WebhookDelivery, ChargeActionRequest, Refund, ChargeRequest, SyncCheckpoint):
            model.objects.all().delete()
        Charge.objects.all().delete()
        self.gateway = InProcessGateway()
        self.gateway.processing_delay = HELD  # nothing moves at the gateway but by a rule
        self.mock = responses.RequestsMock(assert_all_requests_are_fired=False)
        self.mock.start()
        ResponsesFrontend(self.gateway.app).install(self.mock)
        paycharge = {
            **self.gateway.settings(),
            "MAX_RETRIES": 0,  # each lost answer is the machine's, not the client's retry
            "CREATE_SETTLE_SECONDS": 0,  # an unknown answer is looked for at once
            "CHARGE_REQUEST_GRACE": 0,  # recovery may conclude on what it reads
        }
        self.override = override_settings(PAYCHARGE=paycharge)
        self.override.enable()
        # No transport: the fake keeps its deliveries, and a rule hands them over in any order.
        self.gateway.add_webhook(
            "http://testserver/payments/webhook/",
            triggers=("charge_updated", "charge_finished", REFUND_EVENT, CANCEL_EVENT),
        )
        #: Reads of charges and refunds taken before they moved on: the late answers.
        self.stale_charges: list[RemoteCharge] = []
        self.stale_refunds: list[RemoteRefund] = []
        #: The highest rank each row has shown, by gateway id.
        self.charge_ranks: dict[Any, int] = {}
        self.refund_ranks: dict[Any, int] = {}
        #: The final status each charge has shown: only a cancel may follow one.
        self.finals: dict[Any, str] = {}
        self.refunds_asked = False

    def teardown(self) -> None:
        # The fake's timers of this example (held charges and refunds) end now, doing nothing.
        state = self.gateway.state
        for thread in threading.enumerate():
            if isinstance(thread, threading.Timer):
                work = getattr(thread, "function", None)
                if getattr(work, "__self__", None) is state:
                    thread.cancel()
        self.override.disable()
        self.mock.stop()
        self.mock.reset()

    # -- helpers -----------------------------------------------------------------------------

    def mirrored(self, cid: str) -> Charge | None:
        return Charge.objects.filter(gateway_id=cid).first()

    def gateway_pending(self, kind: str = "refunds") -> list[str]:
        """The refunds (or cancels) the gateway holds pending, by id."""
        state = self.gateway.state
        with state.lock:
            held = state.refunds if kind == "refunds" else state.cancels
            return sorted(item.id for item in held.values() if item.status == "pending")

    def remote_charge(self, cid: str) -> RemoteCharge:
        charge = self.gateway.charges[cid]
        return services.get_client().charges.retrieve(charge["store_id"], cid)

    # -- the gateway's side ------------------------------------------------------------------

    @rule(target=charges, lost=st.booleans(), then=st.sampled_from(PAYMENTS))
    def create(self, lost: bool, then: str) -> str:
        """A checkout, its answer lost sometimes (found again by a read, or by the sync);
        the customer pays at once, fails, or not yet."""
        token = self.gateway.create_transaction_token("card")["id"]
        if lost:
            self.gateway.add_fault("POST", r"/charges$", action="drop_after", count=1)
        try:
            services.create_charge(transaction_token_id=token, amount=AMOUNT, currency="JPY")
        except PayChargeError:
            pass  # the outcome is unknown to the shop; the gateway has the charge
        finally:
            self.gateway.clear_faults()
        [cid] = [
            c for c, body in self.gateway.charges.items() if body["transaction_token_id"] == token
        ]
        self.stale_charges.append(self.remote_charge(cid))  # pending: a late read of it
        if then != "later":
            self.pay(cid, then == "pays")
        return cid

    @rule(charge=charges, paid=st.sampled_from([True, True, True, False]))
    def customer(self, charge: str, paid: bool) -> None:
        """The customer pays, or the payment fails (nothing when it has ended already)."""
        self.pay(charge, paid)

    def pay(self, charge: str, paid: bool) -> None:
        try:
            (self.gateway.complete if paid else self.gateway.fail)(charge)
        except ApiError:
            return  # it has ended already
        self.stale_charges.append(self.remote_charge(charge))  # final: late once canceled

    @precondition(lambda self: self.gateway_pending("cancels"))
    @rule(pick=st.integers(0, 99))
    def gateway_finishes_cancel(self, pick: int) -> None:
        """A cancel the gateway holds pending ends: the charge ``canceled`` (or it fails)."""
        pending = self.gateway_pending("cancels")
        self.gateway.state.finish_cancel(pending[pick % len(pending)])

    @precondition(lambda self: self.gateway_pending())
    @rule(pick=st.integers(0, 99), fails=st.booleans())
    def gateway_finishes_refund(self, pick: int, fails: bool) -> None:
        """A refund the gateway holds pending succeeds or fails (``refund_finished`` sent)."""
        state = self.gateway.state
        pending = self.gateway_pending()
        refund_id = pending[pick % len(pending)]
        with state.lock:
            self.stale_refunds.append(parse_refund(state.refunds[refund_id].to_json()))
        if fails:
            state.fail_refund(refund_id)
        else:
            state.finish_refund(refund_id)

    # -- the shop's side ---------------------------------------------------------------------

    @rule(
        charge=charges,
        amount=AMOUNTS,
        mode=st.sampled_from(REFUND_MODES),
    )
    def refund(self, charge: str, amount: int | None, mode: str) -> None:
        """``services.refund_charge`` answered, refused, its answer lost, or never sent:
        the process died once the request was committed (``recover`` sends it)."""
        mirrored = self.mirrored(charge)
        if mirrored is None:
            note("refund: charge not mirrored")
            return
        if mode == "refused":
            code = REFUND_NOT_ALLOWED if (amount or 0) % 2 else REFUND_NOT_WITHIN_BOUNDS
            body = {"status": "error", "code": code, "errors": []}
            self.gateway.add_fault(
                "POST", REFUND_POSTS, action="status", status=400, body=body, count=1
            )
        elif mode in ("lost", "lost_unread"):
            self.gateway.add_fault("POST", REFUND_POSTS, action="drop_after", count=1)
            if mode == "lost_unread":  # the look for it fails too: abandoned, amount reserved
                self.gateway.add_fault("GET", REFUND_POSTS, action="status", status=503, count=1)
        elif mode == "not_sent":
            self.gateway.add_fault("POST", REFUND_POSTS, action="drop_before", count=1)
        self.refunds_asked = True
        try:
            if mode == "crash":  # committed, then the process died before sending it
                open_request(
                    REFUND, mirrored, {} if amount is None else {"amount": amount}, None, ""
                )
            else:
                services.refund_charge(mirrored, amount=amount)
        except PayChargeError as exc:  # refused here or there, busy, or its outcome unknown
            note(f"refund {mode}: {type(exc).__name__}")
        else:
            note(f"refund {mode}: made")
        finally:
            self.gateway.clear_faults()

    @rule(charge=charges, amount=AMOUNTS)
    def refund_again(self, charge: str, amount: int | None) -> None:
        """Another refund of a charge, answered (refunds are half of what the shop does here)."""
        self.refund(charge, amount, "answered")

    @rule(charge=charges)
    def cancel(self, charge: str) -> None:
        """``services.cancel_charge``: a payment voided, captured or not (none once refunded)."""
        mirrored = self.mirrored(charge)
        if mirrored is None:
            return
        try:
            services.cancel_charge(mirrored)
        except PayChargeError as exc:
            note(f"cancel: {type(exc).__name__}")
        else:
            note("cancel: made")

    @precondition(lambda self: bool(self.gateway.state.deliveries))
    @rule(back=st.one_of(st.integers(0, 2), st.integers(0, 99)), without_id=st.booleans())
    def webhook(self, back: int, without_id: bool) -> None:
        """One of the gateway's deliveries (``back`` from the newest: mostly recent ones,
        old ones too), delivered again or for the first time, with or without its id."""
        deliveries = self.gateway.deliveries
        delivery = deliveries[-1 - back % len(deliveries)]
        payload = json.loads(delivery.body)
        if without_id:
            payload.pop("id", None)
        stored, _created = store_delivery(
            body=json.dumps(payload).encode(), headers=delivery.headers, account="default"
        )
        process_delivery(stored.pk)

    @rule(charge=charges, what=st.sampled_from(SYNCS))
    def sync(self, charge: str, what: str) -> None:
        """The bulk sync of charges (full or since the last), every charge's refunds read
        (``sync_refunds``), or one charge's (``sync_charge_children``)."""
        if what.startswith("charges"):
            services.sync_charges(full=what == "charges_full")
        elif what == "refunds":
            services.sync_refunds()
        elif (mirrored := self.mirrored(charge)) is not None:
            sync_charge_children(mirrored)

    @precondition(lambda self: self.refunds_asked)
    @rule()
    def recover(self) -> None:
        """``paycharge_recover``: open and abandoned requests settled by their key or by reads."""
        services.recover_requests(older_than=timedelta(0))

    @rule(pick=st.integers(0, 99), refund=st.booleans())
    def late_answer(self, pick: int, refund: bool) -> None:
        """A read taken before the refund finished (or the charge was paid), stored after:
        a late answer, or a page of a sync that started earlier."""
        if refund and self.stale_refunds:
            remote = self.stale_refunds[pick % len(self.stale_refunds)]
            mirrored = self.mirrored(str(remote.charge_id))
            if mirrored is not None:
                store_refund(remote, charge=mirrored)
        elif self.stale_charges:
            read = self.stale_charges[pick % len(self.stale_charges)]
            services.upsert_charges([read], account="default")

    @precondition(lambda self: bool(self.gateway.state.refunds))
    @rule()
    def reconcile(self) -> None:
        """Every charge's refunds read again: the mirror's totals are the gateway's."""
        services.sync_refunds()
        state = self.gateway.state
        for gateway_id, total in Charge.objects.values_list("gateway_id", "refunds_total"):
            with state.lock:
                refunds = [state.refunds[r] for r in state.charge_refunds.get(str(gateway_id), ())]
                expected = sum(r.amount for r in refunds if r.status == "successful")
            assert total == expected, (
                gateway_id,
                total,
                expected,
                "refunds_total is not the gateway's",
            )

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def rows_keep_their_invariants(self) -> None:
        """The rows read once (four queries), then each invariant checked on them."""
        charges = list(
            Charge.objects.values_list(
                "pk", "gateway_id", "status", "status_rank", "charged_amount", "refunds_total"
            )
        )
        refunds = list(Refund.objects.values_list("gateway_id", "charge", "status", "amount"))
        self.statuses_never_move_backwards(charges, refunds)
        self.refunds_total_is_the_successful_sum(charges, refunds)
        self.what_is_left_stays_within_the_charge(charges, refunds)

    def statuses_never_move_backwards(self, charges: list[Any], refunds: list[Any]) -> None:
        for _pk, gid, status, stored, _charged, _total in charges:
            rank = status_rank(status)
            assert stored == rank, (gid, status, stored, "a stored rank is not its status's")
            assert rank >= self.charge_ranks.get(gid, 0), (gid, status, "a charge moved backwards")
            self.charge_ranks[gid] = rank
            final = self.finals.get(gid)
            assert final in (None, status) or status == "canceled", (gid, final, status, "undone")
            if status in FINAL_STATUSES:
                self.finals[gid] = status
        for gid, _charge, status, _amount in refunds:
            rank = operation_rank(status)
            assert rank >= self.refund_ranks.get(gid, 0), (gid, status, "a refund moved backwards")
            self.refund_ranks[gid] = rank

    def refunds_total_is_the_successful_sum(self, charges: list[Any], refunds: list[Any]) -> None:
        sums = _sums(refunds, ("successful",))
        for pk, gid, _status, _rank, _charged, total in charges:
            assert total == sums[pk], (gid, total, sums[pk], "refunds_total is not the sum")

    def what_is_left_stays_within_the_charge(self, charges: list[Any], refunds: list[Any]) -> None:
        used = _sums(refunds, COUNTED_REFUND_STATUSES)  # what the mirror knows is taken
        paid = [
            (pk, gid, amount)
            for pk, gid, status, _r, amount, _t in charges
            if status == "successful"
        ]
        state = self.gateway.state
        for pk, left in refundable_amounts({pk: amount for pk, _g, amount in paid}).items():
            gid, whole = next((g, a or 0) for p, g, a in paid if p == pk)
            assert used[pk] <= whole, (gid, used[pk], whole, "refunds beyond the charge")
            assert 0 <= left <= whole - used[pk], (gid, left, whole, used[pk], "left to refund")
            with state.lock:  # nor more than the gateway would take: every refund is counted
                gateway_left = state.refundable(state.charges[str(gid)])
            assert left <= gateway_left, (gid, left, gateway_left, "left beyond the gateway's")


def _sums(refunds: list[Any], statuses: tuple[str, ...]) -> defaultdict[int, int]:
    """Each charge's refunds in ``statuses``, added up, by the charge's pk."""
    sums: defaultdict[int, int] = defaultdict(int)
    for _gid, charge, status, amount in refunds:
        if status in statuses:
            sums[charge] += amount or 0
    return sums


STEPS = 40


def run(count: int) -> None:
    """Run the machine for ``count`` examples of ``STEPS`` steps."""
    run_state_machine_as_test(
        MirrorMoney,
        settings=hsettings(
            max_examples=count,
            stateful_step_count=STEPS,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.slow
@pytest.mark.django_db
def test_the_mirror_and_its_money_keep_their_invariants() -> None:
    run(examples(15))


# -- each invariant fails on a planted defect ------------------------------------------------
# Each defect is planted, then the machine runs a few steps of its own rules, its invariants
# checked after each as Hypothesis does: the step that meets the defect fails. (Hypothesis's
# own search finds each of them too, in under ten examples, but at a few CPU-s each and at
# the mercy of its generation order; these runs cost a fraction of a second.)


def replay(scenario: Callable[[Callable[..., Any]], object]) -> None:
    """Run ``scenario`` on a new machine; each step it takes through ``step`` is checked."""
    machine = MirrorMoney()

    def step(rule: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = rule(machine, *args, **kwargs)
        machine.rows_keep_their_invariants()
        return result

    try:
        machine.rows_keep_their_invariants()
        scenario(step)
    finally:
        machine.teardown()


def _late_charge_read(step: Callable[..., Any]) -> None:
    """A charge paid, synced, then its read from before it was paid stored late."""
    charge = step(MirrorMoney.create, lost=False, then="pays")
    step(MirrorMoney.sync, charge, "charges")
    step(MirrorMoney.late_answer, 0, refund=False)


def _late_refund_read(step: Callable[..., Any]) -> None:
    """A refund made, finished at the gateway, read, then its pending read stored late."""
    charge = step(MirrorMoney.create, lost=False, then="pays")
    step(MirrorMoney.sync, charge, "charges")
    step(MirrorMoney.refund, charge, 400, "answered")
    step(MirrorMoney.gateway_finishes_refund, 0, fails=False)
    step(MirrorMoney.sync, charge, "refunds_of_one")
    step(MirrorMoney.late_answer, 0, refund=True)


def _late_read_of_a_canceled_charge(step: Callable[..., Any]) -> None:
    """A payment voided: paid, canceled, synced, then its paid read stored late."""
    charge = step(MirrorMoney.create, lost=False, then="pays")
    step(MirrorMoney.cancel, charge)
    step(MirrorMoney.gateway_finishes_cancel, 0)
    step(MirrorMoney.sync, charge, "charges")
    step(MirrorMoney.late_answer, 1, refund=False)  # [0] is the pending read, [1] the paid one


SCENARIOS = {
    "late charge read": _late_charge_read,
    "late refund read": _late_refund_read,
    "late read of a canceled charge": _late_read_of_a_canceled_charge,
}


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_scenarios_keep_the_invariants_without_a_defect(scenario: str) -> None:
    replay(SCENARIOS[scenario])


def _without_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The charge upsert's rank guard gone: its check in Python and the SQL ``WHERE``."""
    from django_paycharge.services.mirror import postgresql, sqlite, upsert

    real = upsert._lock_existing

    def unranked(sql: Any, cursor: Any, ids: list[Any]) -> dict[Any, tuple[str, int, str, str]]:
        return {gid: (s, 0, d, p) for gid, (s, _rank, d, p) in real(sql, cursor, ids).items()}

    monkeypatch.setattr(upsert, "_lock_existing", unranked)
    for module in (sqlite, postgresql):
        statement, guard = module.UPDATE.rsplit(" WHERE ", 1)
        assert guard.endswith("status_rank <= EXCLUDED.status_rank"), guard
        monkeypatch.setattr(module, "UPDATE", statement)


def _refund_ranks_flat(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refund status ranked alike: a stale ``pending`` replaces a final status."""
    from django_paycharge.services.mirror import lifecycle_store

    monkeypatch.setattr(lifecycle_store, "operation_rank", lambda status: 0)


def _total_not_recounted(monkeypatch: pytest.MonkeyPatch) -> None:
    """``store_refund`` never recounts ``refunds_total`` (as if no refund changed it)."""
    from django_paycharge.services.mirror import lifecycle_store

    monkeypatch.setattr(lifecycle_store, "_counted", lambda refund: None)


def _canceled_ranked_as_paid(monkeypatch: pytest.MonkeyPatch) -> None:
    """``canceled`` ranked with the other final statuses again (as before ea37158)."""
    from django_paycharge.client import vocabulary

    monkeypatch.setattr(vocabulary, "CANCELED_RANK", vocabulary.FINAL_RANK)


def _pending_refunds_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is left to refund forgets pending refunds (only successful ones use it up)."""
    from django_paycharge.services.lifecycle import refunds

    monkeypatch.setattr(refunds, "COUNTED_REFUND_STATUSES", ("successful",))
    # Its statement is compiled once a connection: compiled anew with the defect.
    monkeypatch.setattr(refunds, "_TAKEN", Compiled(refunds._taken))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("plant", "scenario", "caught"),
    [
        (_without_the_guard, "late charge read", "a charge moved backwards"),
        (_canceled_ranked_as_paid, "late read of a canceled charge", "undone"),
        (_refund_ranks_flat, "late refund read", "a refund moved backwards"),
        (_total_not_recounted, "late refund read", "refunds_total is not the sum"),
        (_pending_refunds_left_out, "late refund read", "left to refund"),
    ],
    ids=["charge-guard", "canceled-rank", "refund-ranks", "refunds-total", "left-to-refund"],
)
def test_a_planted_defect_is_caught(
    monkeypatch: pytest.MonkeyPatch,
    plant: Callable[[pytest.MonkeyPatch], None],
    scenario: str,
    caught: str,
) -> None:
    plant(monkeypatch)
    with pytest.raises(AssertionError, match=caught):
        replay(SCENARIOS[scenario])
