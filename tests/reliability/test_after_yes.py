"""After the gateway said yes: a locked database and raising receivers never reach the customer.

1. Another connection locks the database (SQLite) or the charge table
   (PostgreSQL) while a create is in flight, so the write after the gateway's
   yes meets the lock: within the bound it is run again and the charge is
   returned; past it the caller gets the database's error and
   ``paycharge_recover`` stores the charge later.
2. Receivers of every signal raise while charges are created through the API,
   updated by webhooks, returned to by customers and asked for issuer tokens.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError
from django.test import Client
from rest_framework.test import APIClient

from django_paycharge import services, signals
from django_paycharge.models import (
    Cancel,
    Charge,
    ChargeActionRequest,
    ChargeRequest,
    Refund,
    Subscription,
    TransactionTokenInfo,
    WebhookDelivery,
)
from django_paycharge.services import retry
from django_paycharge.testing import CARD_DECLINED, TEST_STORE_ID
from tests.db_locks import locked_database

PAYMENT_TYPES = ("card", "konbini", "bank_transfer")


@pytest.mark.django_db(transaction=True)
def test_a_locked_database_after_the_gateways_yes(
    fake_gateway: Any, monkeypatch: Any, reliability_record: Any
) -> None:
    damage = {"errors_within_bound": 0, "lost_charges": 0, "duplicate_charges": 0}
    cases = 0
    for beyond_bound in (False, True):
        if beyond_bound:  # a database locked for longer than the writes are retried
            monkeypatch.setattr(retry, "ATTEMPTS", 2)
            monkeypatch.setattr(retry, "PAUSE_MAX", 0.01)
        for hold in (0.3, 0.8):
            for payment_type in PAYMENT_TYPES:
                fake_gateway.reset()
                Charge.objects.all().delete()
                ChargeRequest.objects.all().delete()
                token = fake_gateway.create_transaction_token(payment_type)["id"]
                try:
                    with locked_database(hold=hold):
                        services.create_charge(
                            transaction_token_id=token, amount=800, currency="JPY"
                        )
                except DatabaseError:
                    damage["errors_within_bound"] += not beyond_bound
                services.recover_charge_requests(older_than=timedelta(0))
                remote = len(fake_gateway.charges)
                linked = ChargeRequest.objects.filter(state="succeeded").count()
                damage["duplicate_charges"] += max(0, remote - 1)
                damage["lost_charges"] += remote != 1 or Charge.objects.count() != 1 or not linked
                cases += 1
    reliability_record(
        "Local write failure after the gateway's yes",
        "another connection locks the database (SQLite, busy time-out 0) or the charge table "
        "(PostgreSQL, lock_timeout 100 ms) for 0.3 or 0.8 s once the gateway said yes; "
        "then the same with the writes' retries cut to 2, followed by paycharge_recover; "
        "3 payment types",
        cases,
        damage,
        note="beyond the bound the caller gets the database's error (counted as a case, not "
        "damage) and recovery stores and links the charge",
    )


API_STAFF = {"API_CREATE_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"]}
WEBHOOK_TOKEN = "whk-raising-receivers"


@pytest.mark.django_db(transaction=True)
def test_raising_receivers_change_nothing_else(
    fake_gateway: Any, settings: Any, reliability_record: Any
) -> None:
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        **API_STAFF,
        "API_DIRECT_AMOUNT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
        "API_ACTION_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
        "WEBHOOK_AUTH_TOKENS": [WEBHOOK_TOKEN],
        "API_CREATE_THROTTLE_CLASSES": [],
    }
    raised: list[str] = []

    names = {id(signal): name for name, signal in signals.SIGNALS.items()}

    def broken(signal: Any, **kwargs: Any) -> None:
        raised.append(names[id(signal)])
        raise RuntimeError("a shop's receiver bug")

    everything = list(signals.SIGNALS.values())
    for signal in everything:
        signal.connect(broken, weak=False)
    damage = {"5xx": 0, "lost_updates": 0, "requests_not_settled": 0}
    cases = 0
    try:
        api, web = APIClient(), Client()
        for payment_type in PAYMENT_TYPES:
            token = fake_gateway.create_transaction_token(payment_type)["id"]
            body = {"transaction_token_id": token, "amount": 1300, "currency": "JPY"}
            created = api.post("/api/payments/charges/", body, format="json")
            damage["5xx"] += created.status_code >= 500
            charge_id = created.json()["id"]
            if payment_type == "bank_transfer":  # awaiting: the customer reads the account
                issued = api.get(f"/api/payments/charges/{charge_id}/issuer_token/")
                damage["5xx"] += issued.status_code >= 500
                assert issued.status_code == 200, issued.content
            if fake_gateway.charges[charge_id]["status"] not in ("successful", "failed"):
                fake_gateway.complete(charge_id)
            event = {"id": f"d-{cases}", "event": "charge_finished", "data": {"id": charge_id}}
            event["data"] = fake_gateway.charges[charge_id]
            hook = web.post(
                "/payments/webhook/",
                json.dumps(event),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {WEBHOOK_TOKEN}",
            )
            back = web.get("/payments/return/", {"serviceChargeId": charge_id})
            damage["5xx"] += hook.status_code >= 500 or back.status_code >= 500
            damage["lost_updates"] += Charge.objects.get(gateway_id=charge_id).status != (
                "successful"
            )
            damage["lost_updates"] += (
                WebhookDelivery.objects.filter(delivery_id=f"d-{cases}", status="processed").count()
                != 1
            )
            cases += 1
        # Capture then refund one authorized card charge, cancel another: the lifecycle signals.
        for action in ("capture", "cancels"):
            token = fake_gateway.create_transaction_token("card")["id"]
            body = {"transaction_token_id": token, "amount": 1300, "currency": "JPY"}
            created = api.post("/api/payments/charges/", {**body, "capture": False}, format="json")
            charges = f"/api/payments/charges/{created.json()['id']}"
            done = api.post(f"{charges}/{action}/", format="json")
            damage["5xx"] += done.status_code >= 500
            assert done.status_code in (200, 201), done.content
            if action == "capture":
                refunded = api.post(f"{charges}/refunds/", {"amount": 300}, format="json")
                damage["5xx"] += refunded.status_code >= 500
                damage["lost_updates"] += Refund.objects.filter(amount=300).count() != 1
            else:
                damage["lost_updates"] += Cancel.objects.count() != 1
            cases += 1
        cases += _subscriptions_heard(fake_gateway, web, damage)
        cases += _saved_cards_heard(fake_gateway, web, damage)
        damage["requests_not_settled"] += ChargeRequest.objects.exclude(state="succeeded").count()
        damage["requests_not_settled"] += ChargeActionRequest.objects.exclude(
            state="succeeded"
        ).count()
    finally:
        for signal in everything:
            signal.disconnect(broken)
    assert set(raised) == set(signals.SIGNALS), raised
    reliability_record(
        "Raising signal receivers",
        "a receiver of every signal raises while charges are created through the API, "
        "updated by webhooks, returned to by the customer and asked for an issuer token, "
        "captured, refunded and canceled; subscriptions renewed and saved cards renewed and "
        "deleted; 3 payment types",
        cases,
        damage,
        note=f"{len(raised)} receiver calls raised; each was logged by name",
    )


def _hook(web: Client, damage: dict[str, int], event: str, object_id: str) -> None:
    """A webhook of ``event`` about ``object_id`` through the view; damage counted."""
    body = {"id": f"h-{uuid.uuid4()}", "event": event, "data": {"id": object_id}}
    sent = web.post(
        "/payments/webhook/",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {WEBHOOK_TOKEN}",
    )
    damage["5xx"] += sent.status_code >= 500
    damage["lost_updates"] += (
        WebhookDelivery.objects.filter(delivery_id=body["id"], status="processed").count() != 1
    )


def _saved_cards_heard(gateway: Any, web: Client, damage: dict[str, int]) -> int:
    """A saved card charged, renewed and deleted, its token webhooks through the view: the
    saved-card signals. Returns the cases (1)."""
    token = gateway.create_transaction_token(type="recurring")["id"]
    services.charge_saved_card(transaction_token_id=token, amount=700, currency="JPY")
    path = f"/stores/{TEST_STORE_ID}/tokens/{token}/renew"
    renewed = gateway.request("POST", path, {"data": {"exp_year": 2100}}).json()["id"]
    _hook(web, damage, "token_replaced", renewed)
    services.delete_saved_card(renewed)
    _hook(web, damage, "recurring_token_deleted", renewed)
    row = TransactionTokenInfo.objects.get(token_id=renewed)
    damage["lost_updates"] += (row.active, str(row.previous_id)) != (False, token)
    return 1


def _subscriptions_heard(gateway: Any, web: Client, damage: dict[str, int]) -> int:
    """A fixed plan paid to its end, and a declined one suspended then canceled: the
    subscription signals, their webhooks through the view. Returns the cases (2)."""

    def hook(subscription: Subscription, event: str) -> None:
        _hook(web, damage, event, str(subscription.gateway_id))

    plan: dict[str, Any] = {"amount": 900, "currency": "JPY", "period": "monthly"}
    token = gateway.create_transaction_token(type="subscription")["id"]
    fixed = {"plan_type": "fixed_cycles", "fixed_cycles": 2}
    paid = services.create_subscription(transaction_token_id=token, subscription_plan=fixed, **plan)
    hook(paid, "subscription_payment")
    gateway.move_clock(timedelta(days=32))
    hook(paid, "subscription_payment")
    token = gateway.create_transaction_token(type="subscription", card_number=CARD_DECLINED)["id"]
    declined = services.create_subscription(transaction_token_id=token, **plan)
    hook(declined, "subscription_failure")
    services.suspend_subscription(declined)
    services.cancel_subscription(declined)
    statuses = dict(Subscription.objects.values_list("gateway_id", "status"))
    damage["lost_updates"] += statuses != {
        paid.gateway_id: "completed",
        declined.gateway_id: "canceled",
    }
    return 2
