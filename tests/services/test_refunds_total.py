"""A charge's ``refunds_total``: the sum of its successful refunds, kept by the one writer of
refunds (``store_refund``), whoever stores them and in whatever order."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.db.models import Sum

from django_paycharge import outbox, services
from django_paycharge.client.lifecycle_parsing import parse_refund
from django_paycharge.models import Charge, Refund, with_refunded_amounts
from django_paycharge.services.mirror.lifecycle_store import store_refund
from tests.waiting import join, wait_event, wait_until

from .test_lifecycle_races import run_together


def remote_refund(charge: Charge, amount: int | None, status: str, **fields: Any) -> Any:
    """A refund as the gateway would send it (its own id unless ``id`` is given)."""
    payload = {
        "id": str(uuid.uuid4()),
        "charge_id": str(charge.gateway_id),
        "store_id": str(charge.store_id),
        "status": status,
        "amount": amount,
        "currency": "JPY",
        "mode": "test",
        "created_on": "2026-11-26T12:00:00Z",
        **fields,
    }
    return parse_refund(payload)


def stored_total(charge: Charge) -> int:
    return Charge.objects.values_list("refunds_total", flat=True).get(pk=charge.pk)


def counted_total(charge: Charge) -> int:
    """What the refunds table says: the figure the column must always equal."""
    refunds = Refund.objects.filter(charge=charge, status="successful")
    return int(refunds.aggregate(total=Sum("amount"))["total"] or 0)


@pytest.fixture
def paid(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    return services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")


@pytest.mark.django_db
def test_every_store_of_a_refund_keeps_the_charges_total(paid):
    steps = []
    first = remote_refund(paid, 300, "pending")
    store_refund(first, charge=paid)
    steps.append(stored_total(paid))  # pending gives nothing back yet
    done = parse_refund({**first.raw, "status": "successful"})
    store_refund(done, charge=paid)
    steps.append(stored_total(paid))
    store_refund(done, charge=paid)  # the same answer again (a webhook, then a sync)
    store_refund(first, charge=paid)  # a stale read never takes it back
    steps.append(stored_total(paid))
    store_refund(remote_refund(paid, 200, "successful"), charge=paid)
    store_refund(remote_refund(paid, 100, "failed"), charge=paid)
    store_refund(remote_refund(paid, None, "successful"), charge=paid)  # no amount: adds 0
    steps.append(stored_total(paid))
    assert steps == [0, 300, 300, 500]
    assert stored_total(paid) == counted_total(paid)


@pytest.mark.django_db
def test_the_refund_service_and_a_sync_of_the_charge_keep_it(fake_gateway, paid):
    services.refund_charge(paid, amount=400)
    assert stored_total(paid) == 0  # pending: counted once it ends
    services.sync_charge_children(paid)  # its end, as a webhook tells it
    assert stored_total(paid) == 400
    # The charge's own row is rewritten by the guarded upsert: the total is not its column.
    services.update_charge_metadata(paid, {"note": "rewritten"})
    services.refresh_charge(paid.gateway_id)
    assert Charge.objects.get(pk=paid.pk).metadata == {"note": "rewritten"}
    assert stored_total(paid) == counted_total(paid) == 400


@pytest.mark.django_db(transaction=True)
def test_refunds_of_one_charge_stored_at_once_all_count(fake_gateway):
    """Two refunds and the same answer twice, on their own connections at the same moment."""
    token = fake_gateway.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")
    twice = remote_refund(charge, 250, "successful")
    results = run_together(
        lambda: store_refund(remote_refund(charge, 300, "successful"), charge=charge),
        lambda: store_refund(remote_refund(charge, 200, "successful"), charge=charge),
        lambda: store_refund(twice, charge=charge),
        lambda: store_refund(twice, charge=charge),
    )
    assert all(isinstance(r, Refund) for r in results), results
    assert stored_total(charge) == counted_total(charge) == 750


@pytest.mark.django_db
def test_refunds_written_by_other_means_are_counted_again_and_every_view_agrees(paid):
    """A shop's fixtures write refunds without the app: the stored total is stale until
    ``recount_refunds_total``; then the model and the lists' annotation (the API's, the
    admin's; the CSV reads the column too) say the one figure."""
    other = Charge.objects.create(
        gateway_id=uuid.uuid4(), account="default", charged_amount=500, refunds_total=700,
        synced_at=paid.synced_at, first_seen_at=paid.first_seen_at,
    )  # fmt: skip  # its refunds were deleted: the total must fall back to 0
    for amount, status in ((300, "successful"), (200, "successful"), (400, "pending")):
        paid.refunds.create(
            gateway_id=uuid.uuid4(), amount=amount, status=status,
            synced_at=paid.synced_at, first_seen_at=paid.first_seen_at,
        )  # fmt: skip
    assert stored_total(paid) == 0  # written around store_refund
    assert services.recount_refunds_total() == Charge.objects.count()
    assert stored_total(paid) == counted_total(paid) == 500
    assert stored_total(other) == 0
    listed = with_refunded_amounts(Charge.objects.filter(pk=paid.pk)).get()
    assert paid.refunded_amount == listed.refunded_amount == 500
    assert services.recount_refunds_total(Charge.objects.filter(pk=other.pk)) == 1
    # Any query of charges will do: a join made distinct (PostgreSQL refuses to lock
    # one), a slice, an annotation.
    refunded = Charge.objects.filter(refunds__status="successful").distinct()
    assert services.recount_refunds_total(refunded) == 1
    assert services.recount_refunds_total(Charge.objects.order_by("pk")[:1]) == 1
    assert stored_total(paid) == 500


@pytest.mark.django_db
def test_a_refund_listed_under_another_charge_moves_its_amount_with_it(fake_gateway, paid):
    """The gateway lists one refund under two charges: the row moves, and both totals follow
    the rows (the old charge gives the amount up, the new one gains it)."""
    token = fake_gateway.create_transaction_token("card")["id"]
    other = services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")
    refund = remote_refund(paid, 300, "successful")
    store_refund(refund, charge=paid)
    store_refund(remote_refund(other, 100, "successful"), charge=other)
    assert (stored_total(paid), stored_total(other)) == (300, 100)
    moved = parse_refund({**refund.raw, "charge_id": str(other.gateway_id)})
    store_refund(moved, charge=other)
    assert Refund.objects.get(gateway_id=refund.id).charge_id == other.pk
    assert (stored_total(paid), stored_total(other)) == (0, 400)
    # Moving back while it succeeds at last: pending, then successful under the first charge.
    pending = remote_refund(other, 50, "pending")
    store_refund(pending, charge=other)
    done = parse_refund({**pending.raw, "status": "successful", "charge_id": str(paid.gateway_id)})
    store_refund(done, charge=paid)
    assert (stored_total(paid), stored_total(other)) == (50, 400)
    for charge in (paid, other):
        assert stored_total(charge) == counted_total(charge)


def _waiting_on_a_lock() -> bool:
    """Another connection of this database waits on a lock (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        row = cursor.fetchone()
    return bool(row and row[0])


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
@pytest.mark.django_db(transaction=True)
def test_a_recount_racing_an_uncommitted_refund_keeps_its_amount(fake_gateway, monkeypatch):
    """READ COMMITTED: a recount that starts while a refund's transaction is still open must
    not store a sum taken before that refund committed (it stored 0)."""
    token = fake_gateway.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=1000, currency="JPY")
    written, release = threading.Event(), threading.Event()
    send = outbox.send

    def hold_the_transaction_open(*args: Any, **kwargs: Any) -> None:
        if kwargs.get("refund") is not None and not written.is_set():
            written.set()  # the refund's row and its charge's total are written, uncommitted
            wait_event(release, "the recount to wait on the refund's transaction")
        send(*args, **kwargs)

    monkeypatch.setattr(outbox, "send", hold_the_transaction_open)
    results: dict[str, Any] = {}

    def in_thread(name: str, call: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            try:
                results[name] = call()
            except Exception as exc:  # asserted on below
                results[name] = exc
            finally:
                connection.close()

        thread = threading.Thread(target=run, name=name)
        thread.start()
        return thread

    refunding = in_thread(
        "refund", lambda: store_refund(remote_refund(charge, 300, "successful"), charge=charge)
    )
    try:
        wait_event(written, "the refund's row to be written")
        recounting = in_thread(
            "recount", lambda: services.recount_refunds_total(Charge.objects.filter(pk=charge.pk))
        )
        wait_until(_waiting_on_a_lock, "the recount to wait on the refund's lock")
    finally:
        release.set()
    join(refunding, "the refund's transaction")
    join(recounting, "the recount")
    assert isinstance(results["refund"], Refund), results
    assert results["recount"] == 1, results
    assert stored_total(charge) == counted_total(charge) == 300
