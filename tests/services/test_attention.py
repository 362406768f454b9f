"""What needs attention counts every request whose outcome is unknown, abandoned ones included,
with the money it may have moved: in ``needs_attention``, the gauges and the dashboard alike."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from django_paycharge import services
from django_paycharge.exceptions import ActionOutcomeUnknownError
from django_paycharge.models import Charge, ChargeActionRequest, ChargeRequest
from django_paycharge.services.attention import needs_attention
from django_paycharge.views.metrics import metrics
from tests.admin.conftest import charge_row

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_owner_problems")]

DASHBOARD = "/admin/django_paycharge/dashboard/"
KINDS = ("capture", "cancel", "refund", "update")


def _params(kind: str, amount: int, currency: str) -> dict[str, Any]:
    if kind in ("refund", "capture"):
        return {"amount": amount, "currency": currency}
    return {"metadata": {"note": "x"}} if kind == "update" else {}


def plant(charge: Charge) -> None:
    """Every kind, unknown and abandoned, beside requests whose outcome is known."""
    lost = {"outcome": "unknown", "abandoned": "refund"}
    for n, (state, error) in enumerate([("unknown", None), ("abandoned", lost)]):
        ChargeRequest.objects.create(
            params={"amount": 1000 + n, "currency": "JPY", "transaction_token_id": "t"},
            state=state,
            error=error,
        )
        ChargeRequest.objects.create(
            params={"amount": 500, "currency": "usd"}, state=state, error=error
        )
        for kind in KINDS:
            ChargeActionRequest.objects.create(
                kind=kind,
                idempotency_key=f"{kind}-{state}",
                charge=charge,
                params=_params(kind, 300, "JPY"),
                state=state,
                error=error,
            )
    # Known outcomes: none of these counts.
    for state, error in [
        ("succeeded", None),
        ("failed", {"outcome": "refused"}),
        ("abandoned", {"outcome": "not_charged", "abandoned": "max_age"}),
    ]:
        ChargeRequest.objects.create(
            params={"amount": 9, "currency": "JPY"}, state=state, error=error
        )
    for n, (state, error) in enumerate(
        [
            ("succeeded", None),
            ("failed", {"outcome": "refused"}),
            ("abandoned", {"outcome": "not_done", "abandoned": "refund"}),
        ]
    ):
        for kind in KINDS:
            ChargeActionRequest.objects.create(
                kind=kind,
                idempotency_key=f"{kind}-known-{n}",
                charge=charge,
                params=_params(kind, 9, "JPY"),
                state=state,
                error=error,
            )


def test_every_unknown_outcome_is_counted_with_the_money_it_may_have_moved():
    charge = charge_row(mode="live")
    charge.save()
    plant(charge)
    items = {item.key: item for item in needs_attention()}
    creates, actions = items["charge_requests_unknown"], items["action_requests_unconfirmed"]
    assert creates.count == 4  # unknown and abandoned, in two currencies
    assert dict(creates.amounts) == {"JPY": 1000 + 1001, "USD": 1000}
    assert actions.count == 8  # each of the four kinds, unknown and abandoned
    assert dict(actions.amounts) == {"JPY": 600}  # the refunds only: captures move no money
    # The admin lists the items link to hold exactly those rows.
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@shop.example", None))
    page = admin.get(DASHBOARD).content.decode()
    for item in (creates, actions):
        entry = re.search(rf'data-item="{item.key}">(.*?)</li>', page, re.S)
        assert entry is not None
        html = entry.group(1)
        assert f'<span class="paycharge-attention-count">{item.count}</span>' in html
        link = re.search(r'href="([^"]+)"', html)
        assert link is not None
        listed = admin.get(link.group(1).replace("&amp;", "&"))
        assert listed.context["cl"].result_count == item.count, item.key
    assert "¥2,001" in page and "$10.00" in page and "¥600" in page


def test_the_gauges_export_the_counts_and_the_amounts(rf):
    charge = charge_row(mode="live")
    charge.save()
    plant(charge)
    text = metrics(rf.get("/metrics")).content.decode()
    assert 'paycharge_attention{item="charge_requests_unknown"} 4.0' in text
    assert 'paycharge_attention{item="action_requests_unconfirmed"} 8.0' in text
    amount = "paycharge_attention_amount"
    assert f'{amount}{{currency="JPY",item="charge_requests_unknown"}} 2001.0' in text
    assert f'{amount}{{currency="USD",item="charge_requests_unknown"}} 1000.0' in text
    assert f'{amount}{{currency="JPY",item="action_requests_unconfirmed"}} 600.0' in text


def test_a_refund_whose_every_answer_is_lost_shows_with_its_reserved_amount(
    fake_gateway, rf, settings
):
    """The issue's repro: ActionOutcomeUnknownError and 300 reserved, yet 0 counted."""
    token = fake_gateway.create_transaction_token("card")["id"]
    paid = services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0, "CREATE_SETTLE_SECONDS": 0.1}
    fake_gateway.add_fault("*", r"/refunds", action="drop_after", count=1000)
    with pytest.raises(ActionOutcomeUnknownError):
        services.refund_charge(paid, amount=300)
    assert ChargeActionRequest.objects.get().state == "abandoned"
    paid.refresh_from_db()
    assert services.refundable_amount(paid) == 700
    items = {item.key: item for item in needs_attention()}
    assert items["action_requests_unconfirmed"].count == 1
    assert dict(items["action_requests_unconfirmed"].amounts) == {"JPY": 300}
    text = metrics(rf.get("/metrics")).content.decode()
    assert 'paycharge_attention{item="action_requests_unconfirmed"} 1.0' in text


def test_a_request_never_sent_and_abandoned_is_not_counted():
    ChargeRequest.objects.create(
        idempotency_key=uuid.uuid4(),
        params={"amount": 5, "currency": "JPY"},
        state="abandoned",
        error={"outcome": "not_charged", "abandoned": "max_age"},
    )
    items = {item.key: item for item in needs_attention()}
    assert items["charge_requests_unknown"].count == 0
    assert dict(items["charge_requests_unknown"].amounts) == {}


def test_an_abandoned_request_without_an_outcome_record_is_unknown():
    """No record of "nothing done" (no error at all, or none saying it): money may have moved."""
    ChargeRequest.objects.create(params={"amount": 5, "currency": "JPY"}, state="abandoned")
    ChargeRequest.objects.create(
        params={"amount": 7, "currency": "JPY"}, state="abandoned", error={"abandoned": "x"}
    )
    items = {item.key: item for item in needs_attention()}
    assert items["charge_requests_unknown"].count == 2
    assert dict(items["charge_requests_unknown"].amounts) == {"JPY": 12}


def test_a_refund_abandoned_without_an_outcome_record_stays_reserved():
    charge = charge_row(charged_amount=1000, charged_currency="JPY")
    charge.save()
    ChargeActionRequest.objects.create(
        kind="refund",
        idempotency_key="r",
        charge=charge,
        params={"amount": 400, "currency": "JPY"},
        state="abandoned",
        error={"abandoned": "refund"},
    )
    assert services.refundable_amount(charge) == 600
