"""Items without a usable id: quarantined with payload and reason, counted, retried, dismissable."""

from __future__ import annotations

import json
import re
import uuid

import pytest
import responses
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from django_paycharge import services
from django_paycharge.management.commands.paycharge_sync import QUARANTINE_EXIT_STATUS
from django_paycharge.models import Charge, QuarantinedItem
from django_paycharge.services import quarantine as quarantine_module

pytestmark = pytest.mark.django_db

BASE = "https://fake-gateway.paycharge.test"
STORE = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def listing(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": BASE, "MAX_RETRIES": 0}
    page: dict[str, list] = {"items": []}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_callback(
            responses.GET,
            re.compile(rf"^{re.escape(BASE)}/charges"),
            callback=lambda request: (200, {}, json.dumps({**page, "has_more": False})),
        )
        yield page


def _good(**fields):
    return {"id": str(uuid.uuid4()), "store_id": STORE, "status": "successful", **fields}


def test_the_page_is_stored_and_the_unreadable_items_kept(listing):
    good = [_good(), _good()]
    bad = [{"status": "pending", "requested_amount": 5}, "junk", {"id": "order-7"}]
    listing["items"] = [good[0], bad[0], bad[1], good[1], bad[2]]
    result = services.sync_charges()
    assert Charge.objects.count() == 2
    assert result.quarantined == 3
    kept = {q.payload: q.reason for q in QuarantinedItem.objects.all()}
    assert set(kept) == {json.dumps(b, sort_keys=True) for b in bad}
    assert "missing" in kept[json.dumps(bad[0], sort_keys=True)]
    assert "not a UUID" in kept[json.dumps(bad[2], sort_keys=True)]


def test_seen_again_is_counted_on_its_row_and_retried(listing):
    listing["items"] = [{"status": "pending"}]
    services.sync_charges()
    result = services.sync_charges()
    item = QuarantinedItem.objects.get()
    assert (item.times_seen, item.attempts) == (2, 2)  # listed twice, retried once
    assert result.quarantined == 1


def test_an_item_a_later_version_can_read_is_stored_by_the_retry(listing, monkeypatch):
    listing["items"] = [{"charge_id": str(uuid.uuid4()), "status": "successful"}]
    services.sync_charges()
    assert QuarantinedItem.objects.get().resolved_at is None

    def reads_charge_id(value):  # as if the parser learned the gateway's other key
        from django_paycharge.client import parse_charge

        return parse_charge({**value, "id": value["charge_id"]})

    monkeypatch.setattr(quarantine_module, "parse_charge", reads_charge_id)
    monkeypatch.setattr(
        quarantine_module.retry_quarantined,
        "__kwdefaults__",
        {**quarantine_module.retry_quarantined.__kwdefaults__, "parse": reads_charge_id},
    )
    listing["items"] = []
    result = services.sync_charges()
    item = QuarantinedItem.objects.get()
    assert item.resolved_at is not None
    assert Charge.objects.filter(gateway_id=item.resolved_id).exists()
    assert result.quarantined == 0


def test_the_command_counts_them_and_exits_non_zero(listing, capsys):
    listing["items"] = [_good(), {"status": "pending"}]
    with pytest.raises(CommandError) as info:
        call_command("paycharge_sync", "--charges")
    assert info.value.returncode == QUARANTINE_EXIT_STATUS
    assert "1 item(s)" in str(info.value)
    assert "quarantined 1" in capsys.readouterr().out
    assert Charge.objects.count() == 1  # the rest of the page was stored


def test_the_admin_shows_them_and_dismissing_stops_the_count(listing, admin_client):
    listing["items"] = [{"status": "pending", "note": "<script>x</script>"}]
    services.sync_charges()
    item = QuarantinedItem.objects.get()
    page = admin_client.get(
        reverse("admin:django_paycharge_quarantineditem_change", args=[item.pk])
    )
    assert page.status_code == 200
    assert b"&lt;script&gt;" in page.content and b"<script>x" not in page.content
    changelist = reverse("admin:django_paycharge_quarantineditem_changelist")
    answer = admin_client.post(
        changelist, {"action": "dismiss", "_selected_action": [item.pk]}, follow=True
    )
    assert answer.status_code == 200
    assert QuarantinedItem.objects.get().resolved_at is not None
    # Listed again: counted on its row, but a dismissed item stays dismissed.
    assert services.sync_charges().quarantined == 0
    assert QuarantinedItem.objects.get().times_seen == 2


@pytest.mark.parametrize("created_on", ["2020-01-01T00:00:00Z", None])
def test_an_open_charge_without_a_store_does_not_fail_the_sync(fake_gateway, created_on):
    from django_paycharge.client import parse_charge
    from django_paycharge.services.upsert import upsert_charges

    # As a webhook payload or an odd list item may leave it: open, store unknown, and
    # 150 final charges after it, so the sync reads it alone instead of re-listing.
    orphan = parse_charge({"id": str(uuid.uuid4()), "status": "pending", "created_on": created_on})
    final = [
        parse_charge({"id": str(uuid.uuid4()), "status": "successful", "created_on": "2021-01-01"})
        for _ in range(150)
    ]
    upsert_charges([orphan, *final], account="default")
    result = services.sync_charges()  # once an AssertionError on every run
    assert result.failed == 0
    assert Charge.objects.get(gateway_id=orphan.id).store_id is None
