"""Refunds and cancels are read as tolerantly as charges: only ``id`` is required.

The same readers (``client.parsing``), the same fitting into the columns
(``models.fit``) and the same quarantine for list items without a usable id.
"""

from __future__ import annotations

import json
import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
import responses
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from django_paycharge import services
from django_paycharge.client.lifecycle_parsing import parse_cancel, parse_refund
from django_paycharge.client.parsing import ShapeError
from django_paycharge.management.commands.paycharge_sync import QUARANTINE_EXIT_STATUS
from django_paycharge.models import Cancel, Charge, QuarantinedItem, Refund
from django_paycharge.services.mirror.lifecycle_store import store_cancel, store_refund

pytestmark = pytest.mark.django_db

BASE = "https://fake-gateway.paycharge.test"
STORE = uuid.UUID("11111111-1111-4111-8111-111111111111")


@pytest.fixture
def charge():
    now = timezone.now()
    return Charge.objects.create(
        gateway_id=uuid.uuid4(),
        account="default",
        store_id=STORE,
        status="successful",
        raw={},
        synced_at=now,
        first_seen_at=now,
    )


def test_only_the_id_is_required():
    refund = parse_refund({"id": str(uuid.uuid4())})
    assert (refund.status, refund.amount, refund.currency, refund.charge_id) == (None,) * 4
    with pytest.raises(ShapeError, match="'id' is missing"):
        parse_refund({"status": "successful", "amount": 300})
    with pytest.raises(ShapeError, match="not a UUID"):
        parse_cancel({"id": "cancel-7"})


def test_odd_values_are_typed_as_for_charges():
    raw = {
        "id": str(uuid.uuid4()),
        "amount": "300",  # a number as text: 300, as a charge's amount would be
        "amount_formatted": "300.0",
        "currency": 392,  # a number where text belongs: its text
        "status": ["successful"],  # no way to type it: unknown
        "created_on": "yesterday",
        "error": {"code": "1", "message": 5},
        "metadata": [],
    }
    refund = parse_refund(raw)
    assert (refund.amount, refund.amount_formatted, refund.currency) == (300, Decimal(300), "392")
    assert (refund.status, refund.created_on, refund.metadata) == (None, None, None)
    assert refund.error is not None and (refund.error.code, refund.error.message) == (1, "5")
    assert refund.raw is raw


def test_values_that_do_not_fit_their_columns_are_stored_as_unknown(charge):
    raw = {
        "id": str(uuid.uuid4()),
        "charge_id": str(charge.gateway_id),
        "status": "s" * 33,
        "mode": "m" * 17,
        "amount": 2**70,
        "amount_formatted": "1e30",
        "currency": "JPYEN",
        "reason": "r" * 65,
        "message": "wrong\x00size",
    }
    refund = store_refund(parse_refund(raw), charge=charge)
    refund.refresh_from_db()
    assert (refund.status, refund.mode, refund.amount, refund.amount_formatted) == (None,) * 4
    assert (refund.currency, refund.reason) == (None, None)
    assert refund.message == "wrong\ufffdsize"  # PostgreSQL refuses NUL in text
    assert refund.raw == {**raw, "message": "wrong\ufffdsize"}
    cancel = store_cancel(parse_cancel({"id": str(uuid.uuid4()), "mode": 5}), charge=charge)
    cancel.refresh_from_db()
    assert (cancel.status, cancel.mode) == (None, "5")


@pytest.fixture
def lists(settings, charge):
    """The gateway's refund and cancel lists of ``charge``, as the test sets them (no charges)."""
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "BASE_URL": BASE,
        "MAX_RETRIES": 0,
        "STORE_ID": str(STORE),
    }
    items: dict[str, list[dict[str, Any]]] = {"refunds": [], "cancels": []}
    path = rf"^{re.escape(BASE)}/stores/{STORE}/charges/{charge.gateway_id}/(refunds|cancels)"

    def answer(request):
        found = re.match(path, request.url)
        assert found is not None
        kind = found.group(1)
        return 200, {}, json.dumps({"items": items[kind], "has_more": False})

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_callback(responses.GET, re.compile(path), callback=answer)
        empty = {"items": [], "has_more": False}
        listing = rf"^{re.escape(BASE)}(/stores/{STORE})?/charges(\?|$)"
        rsps.add(responses.GET, re.compile(listing), json=empty)
        one = rf"^{re.escape(BASE)}/stores/{STORE}/charges/{charge.gateway_id}(\?|$)"
        body = {"id": str(charge.gateway_id), "store_id": str(STORE), "status": "successful"}
        rsps.add(responses.GET, re.compile(one), json=body)
        yield items


def test_list_items_without_an_id_are_quarantined_and_the_rest_stored(lists, charge):
    good = {"id": str(uuid.uuid4()), "charge_id": str(charge.gateway_id), "status": "successful"}
    lists["refunds"] = [{"amount": 300, "status": "successful"}, good]
    lists["cancels"] = [{"id": "cancel-1", "status": "pending"}]
    counts = services.sync_refunds(charges=[charge])
    assert (counts["refunds"], counts["cancels"], counts["quarantined"]) == (1, 0, 2)
    assert Refund.objects.get().gateway_id == uuid.UUID(good["id"])
    assert not Cancel.objects.exists()
    kept = {q.resource: q for q in QuarantinedItem.objects.all()}
    assert set(kept) == {"refund", "cancel"}
    assert json.loads(kept["refund"].payload) == lists["refunds"][0]
    assert "missing" in kept["refund"].reason and "not a UUID" in kept["cancel"].reason
    # The command says so and exits with the quarantine status, as for charges.
    with pytest.raises(CommandError) as exited:
        call_command("paycharge_sync", "--refunds", "--charges")
    assert exited.value.returncode == QUARANTINE_EXIT_STATUS


def test_a_quarantined_refund_a_later_version_can_read_is_stored_under_its_charge(
    lists, charge, monkeypatch
):
    lists["refunds"] = [{"refund_id": str(uuid.uuid4()), "charge_id": str(charge.gateway_id)}]
    assert services.sync_refunds(charges=[charge])["quarantined"] == 1
    lists["refunds"] = []

    from django_paycharge.services.sync import children as lifecycle_sync

    def reads_refund_id(value):  # as if the parser learned the gateway's other key
        return parse_refund({**value, "id": value.get("refund_id")})

    monkeypatch.setattr(lifecycle_sync, "parse_refund", reads_refund_id)
    assert services.sync_refunds(charges=[])["quarantined"] == 0
    item = QuarantinedItem.objects.get()
    assert item.resolved_at is not None and Refund.objects.get().charge == charge
    assert item.resolved_id == Refund.objects.get().gateway_id
