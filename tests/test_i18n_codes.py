"""Japanese pages say things in Japanese: never the gateway's codes or English text in place
of a word (a status, a payment type, a reason), nor "1,000 JPY" for money.

tests/test_i18n.py holds every page to the catalogue (no English string of ours);
these are what the catalogue cannot see: values shown instead of their labels.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from django.utils import translation

from django_paycharge import services
from django_paycharge.client import Rejected
from django_paycharge.models import Charge, ChargeActionRequest, QuarantinedItem, Refund
from django_paycharge.testing import CARD_DECLINED
from tests.waiting import GUARD

from .test_i18n import visible_text

#: What must never stand in a Japanese page's text: the gateway's codes for statuses and
#: payment types, its English reasons, and money written the plain way.
CODES = re.compile(
    r"(?<![\w-])(successful|failed|awaiting|pending|canceled|authorized|bank_transfer|konbini|"
    r"online|one_time|card declined|insufficient funds|Amount|\d[\d,.]*\s?JPY)(?![\w-])"
)


@pytest.fixture
def pages(admin_client: Any, fake_gateway: Any, settings: Any) -> dict[str, str]:
    def charge(payment_type: str, **data: Any) -> Charge:
        token = fake_gateway.create_transaction_token(payment_type, **data)["id"]
        made = services.create_charge(transaction_token_id=token, amount=1500, currency="JPY")
        return services.wait_for_charge(made, timeout=GUARD)

    paid, declined = charge("card"), charge("card", card_number=CARD_DECLINED)
    konbini = charge("konbini", convenience_store="lawson")
    services.refund_charge(paid, amount=500)
    ChargeActionRequest.objects.create(
        kind="refund", idempotency_key="k-1", charge=paid, params={"amount": 100}
    )
    services.mirror.quarantined.quarantine("default", [Rejected({"status": "pending"}, "no id")])
    settings.LANGUAGE_CODE = "ja"
    found: dict[str, str] = {}
    changelist = reverse("admin:django_paycharge_charge_changelist")

    def keep(name: str, response: Any) -> None:
        assert response.status_code in (200, 400), (name, response.status_code)
        found[name] = visible_text(response.content.decode())

    with translation.override("ja"):
        for name, obj in (("paid", paid), ("declined", declined), ("konbini", konbini)):
            url = reverse("admin:django_paycharge_charge_change", args=[obj.pk])
            keep(f"charge page ({name})", admin_client.get(url))
        keep("charge list", admin_client.get(changelist))
        keep("charge list (refunds filter)", admin_client.get(changelist, {"refunds": "none"}))
        chosen = {"action": "refund_charges", "_selected_action": [paid.pk]}
        keep("refund form", admin_client.post(changelist, chosen))
        key = re.search(
            r'name="idempotency_key" value="([^"]+)"',
            admin_client.post(changelist, chosen).content.decode(),
        )
        assert key is not None
        review = {**chosen, "post": "yes", "scope": "all", "idempotency_key": key.group(1)}
        keep("refund review", admin_client.post(changelist, review))
        for model in ("refund", "chargeactionrequest", "quarantineditem"):
            url = reverse(f"admin:django_paycharge_{model}_changelist")
            keep(f"{model} list", admin_client.get(url))
        refund = Refund.objects.get()
        keep("refund page", admin_client.get(
            reverse("admin:django_paycharge_refund_change", args=[refund.pk])
        ))  # fmt: skip
        item = QuarantinedItem.objects.get()
        keep("dismiss form", admin_client.post(
            reverse("admin:django_paycharge_quarantineditem_changelist"),
            {"action": "dismiss", "_selected_action": [item.pk]},
        ))  # fmt: skip
        admin_client.logout()
        session = admin_client.session
        session["paycharge_charges"] = [str(konbini.gateway_id)]
        session.save()
        keep("payment page (konbini)", admin_client.get(f"/payments/pay/{konbini.gateway_id}/"))
    return found


@pytest.mark.django_db
def test_japanese_pages_show_labels_not_the_gateways_codes(pages: dict[str, str]) -> None:
    offenders = {name: sorted(set(CODES.findall(text))) for name, text in pages.items()}
    offenders = {name: words for name, words in offenders.items() if words}
    assert offenders == {}
    assert "一部返金済み" in pages["charge list"]  # the refund badge
    assert (
        "カードが拒否されました" in pages["charge page (declined)"]
    )  # the reason, through the table
    assert "ローソン" in pages["payment page (konbini)"] and "￥1,500" in pages["refund review"]


@pytest.mark.django_db
def test_the_detector_sees_the_codes_where_english_is_shown(
    admin_client: Any, fake_gateway: Any
) -> None:
    token = fake_gateway.create_transaction_token("card", card_number=CARD_DECLINED)["id"]
    charge = services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")
    charge = services.wait_for_charge(charge, timeout=GUARD)
    url = reverse("admin:django_paycharge_charge_change", args=[charge.pk])
    with translation.override("en"):
        text = visible_text(admin_client.get(url).content.decode())
    assert {"card declined", "Amount"} <= set(CODES.findall(text))
