"""Items without a usable id: quarantined with payload and reason, counted, retried, dismissable."""

from __future__ import annotations

import io
import json
import re
import uuid
from typing import Any

import pytest
import responses
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from django_paycharge import services
from django_paycharge.client import Rejected
from django_paycharge.exceptions import ServiceError
from django_paycharge.management.commands.paycharge_sync import QUARANTINE_EXIT_STATUS
from django_paycharge.models import Charge, QuarantinedItem
from django_paycharge.services.mirror import quarantined as quarantine_module

pytestmark = pytest.mark.django_db

BASE = "https://fake-gateway.paycharge.test"
STORE = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def listing(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": BASE, "MAX_RETRIES": 0}
    page: dict[str, list[Any]] = {"items": []}
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
    assert quarantine_module.retry_quarantined.__kwdefaults__ is not None
    monkeypatch.setattr(
        quarantine_module.retry_quarantined,
        "__kwdefaults__",
        {**quarantine_module.retry_quarantined.__kwdefaults__, "parse": reads_charge_id},
    )
    listing["items"] = []
    result = services.sync_charges()
    item = QuarantinedItem.objects.get()
    assert item.resolved_at is not None and item.resolved_id is not None
    assert Charge.objects.filter(gateway_id=item.resolved_id).exists()
    assert result.quarantined == 0


def test_the_command_counts_them_and_exits_non_zero(listing, capsys):
    listing["items"] = [_good(), {"status": "pending"}]
    with pytest.raises(CommandError) as info:
        call_command("paycharge_sync", "--charges")
    assert info.value.returncode == QUARANTINE_EXIT_STATUS
    assert "1 new item(s)" in str(info.value)
    assert "quarantined 1 (1 new)" in capsys.readouterr().out
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
    chosen = {"action": "dismiss", "_selected_action": [item.pk]}
    asked = admin_client.post(changelist, chosen)
    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    assert QuarantinedItem.objects.get().resolved_at is None  # not without a reason
    answer = admin_client.post(
        changelist, {**chosen, "post": "yes", "reason": "test data of the gateway"}, follow=True
    )
    assert answer.status_code == 200
    dismissed = QuarantinedItem.objects.get()
    assert dismissed.resolved_at is not None and dismissed.resolution == "dismissed"
    assert (dismissed.resolution_note, dismissed.resolved_by) == (
        "test data of the gateway",
        "admin",
    )
    # Listed again: counted on its row, but a dismissed item stays dismissed.
    assert services.sync_charges().quarantined == 0
    assert QuarantinedItem.objects.get().times_seen == 2


@pytest.mark.parametrize("created_on", ["2020-01-01T00:00:00Z", None])
def test_an_open_charge_without_a_store_does_not_fail_the_sync(fake_gateway, created_on):
    from django_paycharge.client import parse_charge
    from django_paycharge.services.mirror.upsert import upsert_charges

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


# -- settling them: reported once, stored by id or dismissed with a reason ----------------------


def sync_command(*args):
    """``paycharge_sync`` as cron runs it: (exit status, what it printed)."""
    out = io.StringIO()
    try:
        call_command("paycharge_sync", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def test_items_without_an_id_are_reported_once_then_wait_for_staff(listing):
    """The gateway served 49 items without an id, then clean data: cron hears of them once."""
    listing["items"] = [{"status": "pending", "n": n} for n in range(49)] + [_good()]
    status, out = sync_command("--charges")
    assert status == QUARANTINE_EXIT_STATUS and "49 new item(s)" in out
    listing["items"] = [_good() for _ in range(3)]  # the gateway's data is clean again
    for _ in range(2):
        status, out = sync_command("--charges")
        assert status == 0, out
        assert "quarantined 49 (0 new)" in out
        assert "49 quarantined item(s) reported before wait for staff" in out
    assert QuarantinedItem.objects.filter(resolved_at__isnull=True).count() == 49
    # Staff dismiss them with a reason: nothing is said any more.
    settled = services.mirror.dismiss_quarantined(
        QuarantinedItem.objects.all(), "the gateway's test data of 3 March", by="staff"
    )
    assert settled == 49
    status, out = sync_command("--charges")
    assert status == 0 and "quarantined" not in out and "wait for staff" not in out
    assert set(QuarantinedItem.objects.values_list("resolution_note", flat=True)) == {
        "the gateway's test data of 3 March"
    }


def test_a_dismissal_needs_a_reason(listing):
    listing["items"] = [{"status": "pending"}]
    services.sync_charges()
    with pytest.raises(ServiceError):
        services.mirror.dismiss_quarantined(QuarantinedItem.objects.all(), "  ")
    assert QuarantinedItem.objects.get().resolved_at is None


def test_an_item_with_an_id_is_retried_and_reported_until_stored(fake_gateway):
    """A refund listed before its charge is mirrored: the app can still store it."""
    from django_paycharge.services.sync.children import sync_refunds

    token = fake_gateway.create_transaction_token("card")["id"]
    created = fake_gateway.create_charge(token, amount=1000)
    refund = {"id": str(uuid.uuid4()), "charge_id": created["id"], "status": "successful",
              "amount": 100, "currency": "JPY"}  # fmt: skip
    services.mirror.quarantined.quarantine(
        "default", [Rejected(refund, "its charge_id names no charge of the mirror")],
        resource=QuarantinedItem.Resource.REFUND,
    )  # fmt: skip
    item = QuarantinedItem.objects.get()
    assert item.retriable
    for _ in range(2):  # reported as new once, then as one the next run tries again
        counts = sync_refunds()
        assert counts["quarantined"] == counts["quarantined_retriable"] == 1
    services.refresh_charge(created["id"])
    counts = sync_refunds(charges=[])
    assert counts["quarantined"] == 0
    stored = QuarantinedItem.objects.get()
    assert (stored.resolution, str(stored.resolved_id)) == ("stored", refund["id"])


def test_staff_store_an_item_by_the_id_they_found(fake_gateway, admin_client):
    token = fake_gateway.create_transaction_token("card")["id"]
    remote = fake_gateway.create_charge(token, amount=1800)
    services.mirror.quarantined.quarantine(
        "default", [Rejected({"status": "successful", "requested_amount": 1800}, "no id")]
    )
    item = QuarantinedItem.objects.get()
    changelist = reverse("admin:django_paycharge_quarantineditem_changelist")
    chosen = {"action": "store_from_gateway", "_selected_action": [item.pk], "post": "yes"}
    unknown = admin_client.post(changelist, {**chosen, "charge_id": str(uuid.uuid4())})
    assert unknown.status_code == 200 and "errorlist" in unknown.content.decode()
    assert QuarantinedItem.objects.get().resolved_at is None
    done = admin_client.post(changelist, {**chosen, "charge_id": remote["id"]}, follow=True)
    assert any("Stored as charge" in str(m) for m in done.context["messages"])
    item.refresh_from_db()
    assert (item.resolution, str(item.resolved_id), item.resolved_by) == (
        "stored", remote["id"], "admin"
    )  # fmt: skip
    assert Charge.objects.get(gateway_id=remote["id"]).requested_amount == 1800


def test_a_sync_that_reports_to_no_one_leaves_the_items_new_for_the_command(listing):
    """The admin's Sync now and paycharge_periodic count the items; paycharge_sync still
    alerts about them once."""
    listing["items"] = [{"status": "pending"}]
    assert services.sync_charges().quarantined_new == 1
    assert services.sync_charges().quarantined_new == 1  # told to no one yet
    status, out = sync_command("--charges")
    assert status == QUARANTINE_EXIT_STATUS and "1 new item(s)" in out
    assert sync_command("--charges")[0] == 0
