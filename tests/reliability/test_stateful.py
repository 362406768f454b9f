"""Stateful property test: random interleavings of everything that moves a charge.

Rules: create (four payment types, declined cards too), the customer pays,
the payment fails or expires, the gateway's own webhooks (sent through the
Django test client as they happen), a stale webhook body replayed, the
customer's return, incremental and full syncs, and a late stale read upserted.
Invariants after every step: the mirror never shows a charge ``successful``
unless the gateway does, a final status in the mirror never changes, and a
final mirror status is the gateway's.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
import responses
from django.test import Client, override_settings
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from django_paycharge import services
from django_paycharge.client.vocabulary import FINAL_STATUSES
from django_paycharge.models import (
    Charge,
    ChargeRequest,
    SyncCheckpoint,
    WebhookDelivery,
)
from django_paycharge.testing import CARD_DECLINED, ApiError
from django_paycharge.testing.pytest_plugin import InProcessGateway
from django_paycharge.testing.responses_frontend import ResponsesFrontend
from tests.hypothesis_profiles import examples

TOKEN = "whk-stateful-token-3e8a"  # a test value
EXAMPLES = examples(25)
STEPS = 30
TOTALS = {
    "examples": 0,
    "steps": 0,
    "checks": 0,
    "paid_not_paid": 0,
    "final_regressed": 0,
    "final_differs": 0,
}


class ChargeLifecycle(RuleBasedStateMachine):
    charges = Bundle("charges")

    def __init__(self) -> None:
        super().__init__()
        for model in (WebhookDelivery, ChargeRequest, SyncCheckpoint, Charge):
            model.objects.all().delete()
        self.gateway = InProcessGateway()
        self.mock = responses.RequestsMock(assert_all_requests_are_fired=False)
        self.mock.start()
        ResponsesFrontend(self.gateway.app).install(self.mock)
        paycharge = {**self.gateway.settings(), "WEBHOOK_AUTH_TOKENS": [TOKEN], "MAX_RETRIES": 0}
        self.override = override_settings(PAYCHARGE=paycharge)
        self.override.enable()
        self.client = Client(raise_request_exception=False)
        self.gateway.add_webhook("http://testserver/payments/webhook/", auth_token=TOKEN)
        self.gateway.deliver_with_django_client(self.client)
        self.first_reads: dict[str, Any] = {}
        self.first_bodies: dict[str, dict[str, Any]] = {}
        self.finals: dict[str, str] = {}
        TOTALS["examples"] += 1

    def teardown(self) -> None:
        self.override.disable()
        self.mock.stop()
        self.mock.reset()

    @rule(
        target=charges,
        kind=st.sampled_from(["card", "declined", "konbini", "bank_transfer", "online"]),
    )
    def create(self, kind: str) -> str:
        TOTALS["steps"] += 1
        extra: dict[str, Any] = {"card_number": CARD_DECLINED} if kind == "declined" else {}
        token = self.gateway.create_transaction_token(
            "card" if kind == "declined" else kind, **extra
        )
        charge = services.create_charge(
            transaction_token_id=token["id"], amount=1000, currency="JPY"
        )
        assert charge.store_id is not None and charge.gateway_id is not None
        cid = str(charge.gateway_id)
        self.first_reads[cid] = services.get_client().charges.retrieve(
            charge.store_id, charge.gateway_id
        )
        self.first_bodies[cid] = self.gateway.charges[cid]
        return cid

    @rule(charge=charges, action=st.sampled_from(["complete", "fail", "expire"]))
    def customer(self, charge: str, action: str) -> None:
        TOTALS["steps"] += 1
        with contextlib.suppress(ApiError):  # already final on the gateway: nothing happens
            getattr(self.gateway, action)(charge)

    @rule(charge=charges, stale=st.booleans())
    def webhook(self, charge: str, stale: bool) -> None:
        TOTALS["steps"] += 1
        data = self.first_bodies[charge] if stale else self.gateway.charges[charge]
        body = json.dumps({"event": "charge_updated", "data": data})
        response = self.client.post(
            "/payments/webhook/",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        )
        assert response.status_code == 200

    @rule(charge=charges)
    def customer_returns(self, charge: str) -> None:
        TOTALS["steps"] += 1
        response = self.client.get("/payments/return/", {"serviceChargeId": charge})
        assert response.status_code == 302

    @rule(full=st.booleans())
    def sync(self, full: bool) -> None:
        TOTALS["steps"] += 1
        services.sync_charges(full=full)

    @rule(charge=charges)
    def late_stale_read(self, charge: str) -> None:
        TOTALS["steps"] += 1
        services.upsert_charges([self.first_reads[charge]], account="default")

    @invariant()
    def mirror_never_ahead_of_the_gateway(self) -> None:
        for gid, status in Charge.objects.values_list("gateway_id", "status"):
            cid = str(gid)
            remote = self.gateway.charges[cid]["status"]
            TOTALS["checks"] += 1
            if status == "successful" and remote != "successful":
                TOTALS["paid_not_paid"] += 1
            if cid in self.finals and status != self.finals[cid]:
                TOTALS["final_regressed"] += 1
            if status in FINAL_STATUSES:
                self.finals.setdefault(cid, status)
                TOTALS["final_differs"] += status != remote
            assert (
                TOTALS["paid_not_paid"] == TOTALS["final_regressed"] == TOTALS["final_differs"] == 0
            ), (cid, status, remote)


@pytest.mark.django_db
def test_charge_lifecycle_state_machine(reliability_record):
    run_state_machine_as_test(
        ChargeLifecycle,
        settings=hsettings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    damage = {k: TOTALS[k] for k in ("paid_not_paid", "final_regressed", "final_differs")}
    reliability_record(
        "Stateful charge lifecycle (hypothesis RuleBasedStateMachine)",
        "random interleavings of create (5 kinds), pay/fail/expire, live and stale webhooks, "
        "customer returns, incremental/full syncs, late stale reads; in-process fake",
        TOTALS["steps"],
        damage,
        note=f"{TOTALS['examples']} examples, {TOTALS['checks']} invariant checks",
    )
