from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycharge import services
from django_paycharge.exceptions import ServerError
from django_paycharge.models import Charge, SyncCheckpoint

pytestmark = pytest.mark.django_db


def gateway_state(fake_gateway):
    return {cid: c["status"] for cid, c in fake_gateway.charges.items()}


def mirror_state():
    return {str(g): s for g, s in Charge.objects.values_list("gateway_id", "status")}


def test_full_sync_mirrors_every_charge_with_constant_queries_per_page(fake_gateway):
    fake_gateway.seed(2_345)
    per_page = []
    with CaptureQueriesContext(connection) as queries:
        last = [0]

        def progress(result):
            per_page.append(len(queries.captured_queries) - last[0])
            last[0] = len(queries.captured_queries)

        result = services.sync_charges(progress=progress)
    assert result.created == 2_345
    assert result.pages == 24
    assert mirror_state() == gateway_state(fake_gateway)
    # The first page also creates the checkpoint; every full page costs the same.
    assert len(set(per_page[1:-1])) == 1, per_page
    assert per_page[1] <= 6


def test_queries_per_page_do_not_grow_with_the_number_of_changed_rows(fake_gateway):
    fake_gateway.seed(300)
    services.sync_charges()
    open_ids = [cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting"]
    for cid in open_ids:
        fake_gateway.complete(cid)
    per_page = []
    with CaptureQueriesContext(connection) as queries:
        last = [0]

        def progress(result):
            per_page.append(len(queries.captured_queries) - last[0])
            last[0] = len(queries.captured_queries)

        result = services.sync_charges(full=True, progress=progress)
    assert result.updated == len(open_ids) > 0
    assert result.unchanged == 300 - len(open_ids)
    assert max(per_page[1:]) <= 6, per_page  # the first page also opens the checkpoint
    assert mirror_state() == gateway_state(fake_gateway)


def test_incremental_sync_picks_up_new_charges_and_status_changes(fake_gateway):
    fake_gateway.seed(150)
    services.sync_charges()
    awaiting = [cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting"]
    assert awaiting
    fake_gateway.complete(awaiting[0])
    new = fake_gateway.create_charge()
    result = services.sync_charges()
    assert Charge.objects.get(gateway_id=new["id"]).status == gateway_state(fake_gateway)[new["id"]]
    assert Charge.objects.get(gateway_id=awaiting[0]).status == "successful"
    assert result.created == 1
    assert mirror_state() == gateway_state(fake_gateway)


def test_a_crash_mid_sync_resumes_from_the_last_stored_page(fake_gateway, monkeypatch):
    fake_gateway.seed(1_000)
    pages_before_crash = 4
    calls = {"n": 0}
    original = services.sync.read.upsert_prepared

    def crashing_after_some_pages(*args, **kwargs):
        # Deterministic: the crash comes while storing the page after the fourth.
        calls["n"] += 1
        if calls["n"] > pages_before_crash:
            raise ServerError("the gateway failed mid-sync")
        return original(*args, **kwargs)

    monkeypatch.setattr(services.sync.read, "upsert_prepared", crashing_after_some_pages)
    with pytest.raises(ServerError):
        services.sync_charges()
    monkeypatch.undo()
    checkpoint = SyncCheckpoint.objects.get(resource="charges")
    [window] = checkpoint.windows.all()
    assert checkpoint.in_progress and window.cursor and window.pages == pages_before_crash
    assert "mid-sync" in checkpoint.last_error
    assert Charge.objects.count() == pages_before_crash * 100
    result = services.sync_charges()
    assert result.pages == 10 - pages_before_crash
    assert result.created == 1_000 - pages_before_crash * 100
    assert mirror_state() == gateway_state(fake_gateway)
    checkpoint.refresh_from_db()
    assert not checkpoint.in_progress and not checkpoint.windows.exists()


def test_a_stale_read_never_regresses_a_final_status(fake_gateway):
    token = fake_gateway.create_transaction_token("konbini")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=500, currency="JPY")
    assert charge.store_id is not None and charge.gateway_id is not None
    awaiting_read = services.get_client().charges.retrieve(charge.store_id, charge.gateway_id)
    assert awaiting_read.status == "awaiting"
    fake_gateway.complete(str(charge.gateway_id))
    services.refresh_charge(charge.gateway_id)
    result = services.upsert_charges([awaiting_read], account="default")
    assert result.stale == 1
    assert Charge.objects.get(pk=charge.pk).status == "successful"


def test_a_stale_read_of_a_paid_charge_never_undoes_its_cancel(fake_gateway):
    """A captured card payment canceled (voided): both statuses are final, and a read of the
    paid charge stored late (a sync page, a slow answer) took the mirror back to
    "successful" (found by tests/services/test_state_machines.py)."""
    fake_gateway.processing_delay = 60  # the cancel stays pending until the control below
    token = fake_gateway.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=500, currency="JPY")
    assert charge.store_id is not None and charge.gateway_id is not None
    fake_gateway.complete(str(charge.gateway_id))
    paid_read = services.get_client().charges.retrieve(charge.store_id, charge.gateway_id)
    assert paid_read.status == "successful"
    services.cancel_charge(services.refresh_charge(charge.gateway_id))
    [cancel] = list(fake_gateway.state.cancels)
    fake_gateway.state.finish_cancel(cancel)
    assert services.refresh_charge(charge.gateway_id).status == "canceled"
    result = services.upsert_charges([paid_read], account="default")
    assert result.stale == 1
    assert Charge.objects.get(pk=charge.pk).status == "canceled"


def test_status_changed_fires_once_per_real_change(
    fake_gateway, django_capture_on_commit_callbacks
):
    from django_paycharge import signals

    seen = []

    def on_change(**kwargs):
        seen.append((kwargs["previous_status"], kwargs["status"]))

    signals.charge_status_changed.connect(on_change, weak=False)
    # Signals go out after commit: the test's own transaction never commits.
    try:
        with django_capture_on_commit_callbacks(execute=True):
            token = fake_gateway.create_transaction_token("bank_transfer")["id"]
            charge = services.create_charge(transaction_token_id=token, amount=500, currency="JPY")
            services.refresh_charge(charge.gateway_id)
            services.refresh_charge(charge.gateway_id)
            fake_gateway.complete(str(charge.gateway_id))
            services.refresh_charge(charge.gateway_id)
            services.sync_charges(full=True)
    finally:
        signals.charge_status_changed.disconnect(on_change)
    assert seen == [(None, "pending"), ("pending", "awaiting"), ("awaiting", "successful")]


def test_open_charges_are_refreshed_one_by_one_when_that_is_cheaper(fake_gateway):
    fake_gateway.seed(500)
    services.sync_charges()
    token = fake_gateway.create_transaction_token("konbini")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=500, currency="JPY")
    services.refresh_charge(charge.gateway_id)
    fake_gateway.complete(str(charge.gateway_id))
    # Move the high-water mark past the charge so only the open-charge refresh can see it.
    newest = Charge.objects.latest("created_on").created_on
    assert newest is not None
    SyncCheckpoint.objects.filter(resource="charges").update(high_water=newest + timedelta(hours=1))
    services.sync_charges()
    assert Charge.objects.get(pk=charge.pk).status == "successful"
    assert mirror_state() == gateway_state(fake_gateway)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
def test_two_threads_syncing_one_store_end_with_no_duplicates(fake_gateway):
    """The second waits for the first (one sync per account at a time), then syncs too."""
    fake_gateway.seed(1_200)
    errors = []

    def run():
        try:
            services.sync_charges(full=True, wait=60)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Charge.objects.count() == 1_200
    assert mirror_state() == gateway_state(fake_gateway)


def test_webhook_configurations_are_mirrored_and_removed_ones_marked(fake_gateway):
    from django_paycharge.models import WebhookConfiguration

    first = fake_gateway.add_webhook("https://shop.example/hook1", auth_token="tok-1")
    fake_gateway.add_webhook("https://shop.example/hook2", auth_token="tok-2")
    result = services.sync_webhooks()
    assert result.created == 2
    # Read again from an unchanged gateway: unchanged, not "updated" on every run.
    again = services.sync_webhooks()
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)
    fake_gateway.request(
        "PATCH", f"/stores/{first['store_id']}/webhooks/{first['id']}", {"active": False}
    )
    changed = services.sync_webhooks()
    assert (changed.created, changed.updated, changed.unchanged) == (0, 1, 1)
    stored = WebhookConfiguration.objects.get(gateway_id=first["id"])
    assert stored.active is False
    assert stored.triggers == first["triggers"]
    assert stored.auth_token_digest == services.token_digest("tok-1")
    assert "tok-1" not in str(stored.raw)
    deleted = fake_gateway.request("DELETE", f"/stores/{first['store_id']}/webhooks/{first['id']}")
    assert deleted.status in (200, 204)
    result = services.sync_webhooks()
    assert result.removed == 1
    stored.refresh_from_db()
    assert stored.removed_at is not None and not stored.active
    assert not stored.is_usable


def test_a_configuration_listed_without_its_store_is_marked_removed_when_gone(fake_gateway):
    """An answer that leaves store_id out: the row keeps the store it was listed under,
    and disappears from the active ones once the gateway no longer lists it."""
    from django_paycharge.models import WebhookConfiguration

    hook = fake_gateway.add_webhook("https://shop.example/hook", auth_token="tok-1")
    storeless = {k: v for k, v in hook.items() if k not in ("store_id", "auth_token")}
    page = {"items": [storeless], "has_more": False}
    fake_gateway.add_fault("GET", r"/webhooks$", action="status", status=200, body=page, count=1)
    services.sync_webhooks()
    stored = WebhookConfiguration.objects.get(gateway_id=hook["id"])
    assert str(stored.store_id) == fake_gateway.settings()["STORE_ID"] and stored.is_usable
    # An older install's row without a store is also checked against the list.
    WebhookConfiguration.objects.filter(pk=stored.pk).update(store_id=None)
    fake_gateway.request("DELETE", f"/stores/{hook['store_id']}/webhooks/{hook['id']}")
    assert services.sync_webhooks().removed == 1
    stored.refresh_from_db()
    assert stored.removed_at is not None and not stored.active


def test_a_charge_with_nul_characters_does_not_poison_its_page(fake_gateway):
    fake_gateway.seed(30)
    token = fake_gateway.create_transaction_token("card")["id"]
    bad = fake_gateway.create_charge(token, metadata={"note": "a\x00b", "k\x00": "v"})
    result = services.sync_charges()
    assert result.created == 31
    stored = Charge.objects.get(gateway_id=bad["id"])
    assert stored.metadata == {"note": "a\ufffdb", "k\ufffd": "v"}
    assert services.sync_charges(full=True).unchanged == 31  # the digest is of the original


def test_a_failing_receiver_does_not_stop_the_signals_of_other_charges(
    fake_gateway, caplog, django_capture_on_commit_callbacks
):
    from django_paycharge import signals

    fake_gateway.seed(20)
    seen = []

    def failing(**kwargs):
        raise RuntimeError("shop bug")

    def counting(**kwargs):
        seen.append(kwargs["charge"].gateway_id)

    signals.charge_status_changed.connect(failing, weak=False)
    signals.charge_status_changed.connect(counting, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            result = services.sync_charges()
    finally:
        signals.charge_status_changed.disconnect(failing)
        signals.charge_status_changed.disconnect(counting)
    assert result.created == 20
    assert len(seen) == 20
    named = [r for r in caplog.records if r.name == "django_paycharge.signals"]
    assert len(named) == 20
    assert all("test_sync" in r.getMessage() and "failing" in r.getMessage() for r in named)


def test_synced_rows_hold_exactly_what_the_gateway_sent(fake_gateway):
    """Rows encoded in advance (and on demand) store the gateway's JSON and typed columns."""
    fake_gateway.seed(250)
    services.sync_charges()
    remote = services.get_client().charges.list_page(limit=100, cursor_direction="asc").items
    assert len(remote) == 100
    stored = Charge.objects.in_bulk([c.id for c in remote], field_name="gateway_id")
    for charge in remote:
        row = stored[charge.id]
        assert row.raw["store_name"] and row.raw["merchant_name"]  # a list item, as sent
        assert {k: v for k, v in row.raw.items() if not k.endswith("_name")} == (
            fake_gateway.charges[str(charge.id)]
        )
        assert row.store_id == charge.store_id
        assert row.created_on == charge.created_on
        assert row.requested_amount_formatted == charge.requested_amount_formatted
        assert row.raw_digest == services.mirror.upsert.raw_digest(charge.raw)


def test_an_unchanged_resync_encodes_only_the_rows_it_writes(fake_gateway, monkeypatch):
    fake_gateway.seed(500)
    services.sync_charges()
    changed = next(cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting")
    fake_gateway.complete(changed)
    encoded = []
    module = services.mirror.upsert.statements(connection)
    original = module.row_encoder

    def counting(conn):
        encode = original(conn)

        def wrapped(row):
            encoded.append(row["gateway_id"])
            return encode(row)

        return wrapped

    monkeypatch.setattr(module, "row_encoder", counting)
    result = services.sync_charges(full=True)
    assert (result.updated, result.unchanged) == (1, 499)
    assert [str(gid) for gid in encoded] == [changed]
    assert mirror_state() == gateway_state(fake_gateway)


def test_the_refresh_of_open_charges_counts_against_the_page_budget(fake_gateway):
    fake_gateway.seed(500)
    services.sync_charges()
    token = fake_gateway.create_transaction_token("konbini")["id"]
    charges = [
        services.create_charge(transaction_token_id=token, amount=500 + n, currency="JPY")
        for n in range(3)
    ]
    for charge in charges:
        services.refresh_charge(charge.gateway_id)
        fake_gateway.complete(str(charge.gateway_id))
    # Past the high-water mark: only the refresh of open charges (one by one) sees them.
    newest = Charge.objects.latest("created_on").created_on
    assert newest is not None
    SyncCheckpoint.objects.filter(resource="charges").update(high_water=newest + timedelta(hours=1))
    bounded = services.sync_charges(max_pages=2)
    # One page of the run's window, one of the refresh (from the oldest open charge).
    assert not bounded.complete and bounded.pages == 2
    assert not SyncCheckpoint.objects.get(resource="charges").in_progress  # windows all read
    paid = Charge.objects.filter(pk__in=[c.pk for c in charges], status="successful")
    assert paid.count() == 0  # the newest open charges: beyond the refresh's first page
    assert services.sync_charges().complete  # the next run refreshes the rest
    assert paid.count() == 3
    assert mirror_state() == gateway_state(fake_gateway)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
def test_a_finished_syncs_lock_is_free_at_once_for_the_next():
    """Closing the lock's session frees it only once the server has ended that session; the
    next sync of the same process must not find it still held."""
    from django_paycharge.services.sync.lock import account_lock

    for _round in range(30):
        with account_lock("default") as held:
            assert held
        with account_lock("default") as held_again:
            assert held_again
