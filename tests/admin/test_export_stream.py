"""The CSV export streams: flat memory, lines ending in \\n, never a formula, and what is left
to refund asked for charges anywhere in the file (on both databases)."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from django_paycharge import services
from django_paycharge.admin import export
from django_paycharge.models import Charge, ChargeActionRequest, Refund

from .conftest import charge_row

pytestmark = pytest.mark.django_db
EXPORT = reverse("admin:django_paycharge_charge_export")
TEXTS = ("account", "status", "mode", "payment_type", "merchant_transaction_id")


def body(client):
    response = client.get(EXPORT)
    assert response.status_code == 200 and response.streaming
    return b"".join(response.streaming_content)


def rows(client):
    return list(csv.DictReader(io.StringIO(body(client).decode()[1:])))


@pytest.mark.parametrize("start", export.FORMULA_START)
def test_no_text_cell_starts_a_formula_whatever_its_first_character(admin_client, start):
    texts = {name: f"{start}x" for name in TEXTS}
    currency = f"{start}X"
    Charge.objects.bulk_create(
        [
            charge_row(**texts, requested_currency=currency, metadata=f"{start}m"),
            charge_row(**texts, fee_amount=1, fee_currency=currency, metadata=-1),
            charge_row(**texts, metadata={"k": f"{start}v"}),
        ]
    )
    exported = rows(admin_client)
    assert len(exported) == 3
    for row in exported:
        assert [row[name] for name in TEXTS] == [f"'{start}x"] * len(TEXTS)
    assert exported[0]["requested_currency"] == f"'{currency}"
    assert exported[0]["metadata"] == f"'{start}m"
    assert exported[1]["fee_currency"] == f"'{currency}"
    assert exported[1]["metadata"] == "'-1"  # a number's JSON text may start with a minus
    assert exported[2]["metadata"] == json.dumps({"k": f"{start}v"})  # an object's: {


def _peak(client):
    """Peak Python memory while the export is read chunk by chunk, and its size."""
    tracemalloc.start()
    try:
        response = client.get(EXPORT)
        size = sum(len(chunk) for chunk in response.streaming_content)
        return tracemalloc.get_traced_memory()[1], size
    finally:
        tracemalloc.stop()


def test_memory_stays_flat_however_many_rows(admin_client, monkeypatch):
    monkeypatch.setattr(export, "CHUNK", 100)
    Charge.objects.bulk_create([charge_row(metadata={"order": "x" * 200}) for _ in range(300)])
    _peak(admin_client)  # the first run's one-off costs (imports, caches)
    small, small_size = _peak(admin_client)
    Charge.objects.bulk_create([charge_row(metadata={"order": "x" * 200}) for _ in range(1200)])
    large, large_size = _peak(admin_client)
    assert large_size > 4 * small_size
    # A file built in memory would grow by at least the extra text; a stream by a batch.
    assert large - small < (large_size - small_size) / 4


def test_what_is_left_to_refund_anywhere_in_the_file(admin_client, monkeypatch):
    # Several batches, the refunded charges among the first lines and across batches.
    monkeypatch.setattr(export, "CHUNK", 50)
    Charge.objects.bulk_create(
        [charge_row(charged_amount=1000, charged_currency="JPY") for _ in range(130)]
    )
    charges = list(Charge.objects.order_by("-created_on", "-id"))
    now = timezone.now()
    refunded = charges[:120:2]
    Refund.objects.bulk_create(
        Refund(
            gateway_id=uuid.uuid4(),
            charge=charge,
            amount=100 + n,
            status="successful",
            synced_at=now,
            first_seen_at=now,
        )
        for n, charge in enumerate(refunded)
    )
    services.recount_refunds_total()  # refunds written here, not by the app: counted again
    asked = charges[1]  # a refund asked for, not answered yet: reserved
    ChargeActionRequest.objects.create(
        kind="refund", idempotency_key="pending-1", charge=asked, params={"amount": 300}
    )
    text = body(admin_client)
    assert b"\r\n" not in text and text.endswith(b"\n")
    exported = {r["charge_id"]: r for r in csv.DictReader(io.StringIO(text.decode()[1:]))}
    assert len(exported) == 130
    for n, charge in enumerate(refunded):
        row = exported[str(charge.gateway_id)]
        assert row["refund_state"] == "partially_refunded"
        assert row["refunded_amount"] == str(100 + n)
        assert row["left_to_refund"] == str(900 - n)
    assert exported[str(asked.gateway_id)]["left_to_refund"] == "700"
    assert exported[str(charges[-1].gateway_id)]["left_to_refund"] == "1000"
    for charge in charges:
        assert exported[str(charge.gateway_id)]["left_to_refund"] == str(
            services.refundable_amount(charge)
        )
