"""Announcements at least once, to the end: recorded with the change, each receiver run until
it returns (outbox/announcements.py), by the lease machinery of webhook deliveries."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from django_paycharge import outbox, periodic, signals
from django_paycharge.models import Announcement, Charge
from django_paycharge.outbox import announcements, leases
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


class Shop:
    """Two receivers of ``charge_status_changed``: one that records, one that can be broken."""

    def __init__(self) -> None:
        self.heard: list[dict[str, Any]] = []
        self.tried: list[Any] = []
        self.failures = 0  # how many more runs of ``fragile`` raise

    def record(self, sender: Any, **kwargs: Any) -> None:
        self.heard.append(kwargs)

    def fragile(self, sender: Any, **kwargs: Any) -> None:
        self.tried.append(kwargs["event_id"])
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the shop's database blipped")


@pytest.fixture
def shop() -> Iterator[Shop]:
    made = Shop()
    signals.charge_status_changed.connect(made.record, sender=Charge, weak=False)
    signals.charge_status_changed.connect(made.fragile, sender=Charge, weak=False)
    yield made
    signals.charge_status_changed.disconnect(made.record, sender=Charge)
    signals.charge_status_changed.disconnect(made.fragile, sender=Charge)


def _charge(status: str = "successful") -> Charge:
    return Charge.objects.create(
        gateway_id="6b7c5f1e-3f8e-4d0e-9a4b-0c1d2e3f4a5b",
        status=status,
        synced_at=timezone.now(),
        first_seen_at=timezone.now(),
        raw={},
    )


def _change(charge: Charge, previous: str = "pending") -> None:
    with transaction.atomic():
        Charge.objects.filter(pk=charge.pk).update(status="successful")
        outbox.send(
            signals.charge_status_changed,
            sender=Charge,
            charge=charge,
            previous_status=previous,
            status="successful",
        )


def _lease_runs_out() -> None:
    """Time passes beyond every lease and back-off (what a clock would do)."""
    past = timezone.now() - timedelta(seconds=1)
    Announcement.objects.filter(lease_until__isnull=False).update(lease_until=past)


def test_a_change_is_recorded_per_receiver_with_one_event_id_and_heard_after_commit(shop):
    charge = _charge()
    _change(charge)
    rows = list(Announcement.objects.order_by("receiver"))
    assert [r.receiver.rsplit(".", 1)[1] for r in rows] == ["fragile", "record"]
    assert {r.status for r in rows} == {"heard"} and {r.attempts for r in rows} == {1}
    assert len({r.event_id for r in rows}) == 1
    [heard] = shop.heard
    assert heard["event_id"] == rows[0].event_id and heard["charge"] is charge
    assert rows[0].arguments == {
        "charge": {"model": "django_paycharge.charge", "pk": charge.pk},
        "previous_status": "pending",
        "status": "successful",
    }


def test_a_rolled_back_change_is_neither_recorded_nor_heard(shop):
    charge = _charge()
    with pytest.raises(RuntimeError), transaction.atomic():
        outbox.send(signals.charge_status_changed, sender=Charge, charge=charge, status="x")
        raise RuntimeError("the change failed")
    assert not Announcement.objects.exists() and shop.heard == []


def test_a_raising_receiver_is_run_again_alone_with_the_same_event_id(shop, caplog):
    shop.failures = 1
    charge = _charge()
    _change(charge)
    failed = Announcement.objects.get(receiver__endswith="fragile")
    assert (failed.status, failed.attempts) == ("running", 1)
    assert failed.last_error == "ConnectionError: the shop's database blipped"
    assert failed.retrying and failed.lease_until is not None
    assert failed.lease_until <= timezone.now() + timedelta(seconds=300)
    assert "fragile of charge_status_changed failed (ConnectionError)" in caplog.text
    assert periodic.run_periodic(["announcements"]).done == {
        "announcements": {"sent": 0, "not_heard": 0}
    }  # not due before its back-off runs out
    _lease_runs_out()
    report = periodic.run_periodic(["announcements"])
    assert report.done == {"announcements": {"sent": 1, "not_heard": 0}}
    failed.refresh_from_db()
    assert (failed.status, failed.attempts, failed.last_error) == ("heard", 2, "")
    assert len(shop.heard) == 1  # the receiver that returned was not run twice
    assert shop.tried == [failed.event_id, failed.event_id]


def test_a_receiver_whose_process_died_is_run_again_once_the_lease_runs_out(shop, settings):
    charge = _charge()
    with transaction.atomic():  # the process dies between its commit and the receivers
        outbox.send(
            signals.charge_status_changed,
            sender=Charge,
            charge=charge,
            previous_status="pending",
            status="successful",
        )
        transaction.get_connection().run_on_commit.clear()
    assert set(Announcement.objects.values_list("status", flat=True)) == {"running"}
    assert (
        announcements.due_announcements() == []
    )  # the lease holds: the process may still be running
    _lease_runs_out()
    assert periodic.run_periodic(["announcements"]).failed == {}
    assert set(Announcement.objects.values_list("status", flat=True)) == {"heard"}
    [heard] = shop.heard
    assert heard["charge"] == charge and heard["charge"] is not charge  # read afresh
    assert (heard["previous_status"], heard["status"]) == ("pending", "successful")
    first = Announcement.objects.first()
    assert first is not None and heard["event_id"] == first.event_id


def test_a_receiver_failing_for_good_is_not_heard_and_counted(shop):
    shop.failures = Announcement.LEASE_ATTEMPTS
    _change(_charge())
    for _ in range(Announcement.LEASE_ATTEMPTS - 1):
        _lease_runs_out()
        periodic.run_periodic(["announcements"])
    row = Announcement.objects.get(receiver__endswith="fragile")
    assert (row.status, row.attempts) == ("not_heard", Announcement.LEASE_ATTEMPTS)
    assert row.lease_until is None and "blipped" in row.last_error
    assert announcements.count_not_heard() == 1
    with pytest.raises(CommandError, match="Periodic steps failed: announcements"):
        call_command("paycharge_periodic", "--only", "announcements")
    _lease_runs_out()
    periodic.run_periodic(["announcements"])
    assert Announcement.objects.get(pk=row.pk).attempts == Announcement.LEASE_ATTEMPTS
    assert len(shop.tried) == Announcement.LEASE_ATTEMPTS  # never run again by itself


def test_the_first_retry_comes_no_later_than_the_lease(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_LEASE_SECONDS": 2}
    assert max(announcements.backoff(1).total_seconds() for _ in range(200)) <= 2
    assert announcements.backoff(5).total_seconds() <= announcements.RETRY_BASE * 2**4


def test_a_receiver_no_longer_connected_fails_its_run_and_a_new_one_hears_only_new_changes(
    shop,
):
    charge = _charge()
    with transaction.atomic():
        _change(charge)
        transaction.get_connection().run_on_commit.clear()
    signals.charge_status_changed.disconnect(shop.fragile, sender=Charge)
    late: list[Any] = []

    def latecomer(sender: Any, **kwargs: Any) -> None:
        late.append(kwargs)

    signals.charge_status_changed.connect(latecomer, sender=Charge, weak=False)
    try:
        _lease_runs_out()
        periodic.run_periodic(["announcements"])
    finally:
        signals.charge_status_changed.disconnect(latecomer, sender=Charge)
    gone = Announcement.objects.get(receiver__endswith="fragile")
    assert gone.status == "running" and "is not connected in this process" in gone.last_error
    assert Announcement.objects.get(receiver__endswith="record").status == "heard"
    assert late == [] and not Announcement.objects.filter(receiver__endswith="latecomer").exists()


def test_an_argument_that_cannot_be_stored_is_refused_at_once(shop):
    with pytest.raises(TypeError, match="'when' cannot be stored"):
        outbox.send(signals.charge_status_changed, sender=Charge, when=timezone.now())


def test_charge_returned_is_heard_live_and_not_recorded():
    got: list[dict[str, Any]] = []

    def on_return(sender: Any, **kwargs: Any) -> None:
        got.append(kwargs)

    signals.charge_returned.connect(on_return, weak=False)
    try:
        outbox.send(signals.charge_returned, sender=Charge, charge=None, request=object())
    finally:
        signals.charge_returned.disconnect(on_return)
    assert len(got) == 1 and got[0]["event_id"] is not None
    assert not Announcement.objects.exists()


def test_heard_and_dismissed_rows_are_pruned_after_the_retention(shop):
    shop.failures = 1
    _change(_charge())
    Announcement.objects.filter(status="running").update(status="not_heard")
    announcements.dismiss_announcements(
        list(Announcement.objects.values_list("pk", flat=True)), by="staff"
    )
    assert set(Announcement.objects.values_list("status", flat=True)) == {"heard", "dismissed"}
    Announcement.objects.update(created_at=timezone.now() - timedelta(days=400))
    assert announcements.prune_announcements(older_than_days=90) == 2


def test_a_receiver_still_running_keeps_its_lease_and_is_never_run_twice_at_once(
    settings, monkeypatch
):
    """Issue 43: a 2.5 s receiver under a 1 s lease was started again beside itself by the
    sweep. The clock is the test's; the receiver moves it while it runs, and after each
    move another worker's sweep tries to take the row over."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_LEASE_SECONDS": 1}
    clock = [timezone.now()]
    monkeypatch.setattr(timezone, "now", lambda: clock[0])
    runs: list[Any] = []
    running: list[int] = []
    most = [0]

    def renewed_or_never() -> bool:
        """The lease was renewed at the clock's time, or nothing is left to renew it."""
        lease = Announcement.objects.values_list("lease_until", flat=True).get()
        beating = leases.renewing() > 0
        return lease == clock[0] + timedelta(seconds=1) or not beating

    def slow(sender: Any, **kwargs: Any) -> None:
        runs.append(kwargs["event_id"])
        running.append(1)
        most[0] = max(most[0], len(running))
        try:
            if len(runs) > 1:
                return  # a second run: the verdict below counts it
            for _ in range(5):  # 2.5 s of the clock, half a second at a time
                clock[0] += timedelta(seconds=0.5)
                outbox.hear_due(by="another worker's sweep")
                wait_until(renewed_or_never, "the running receiver's lease renewed")
        finally:
            running.pop()

    signals.charge_status_changed.connect(slow, sender=Charge, weak=False)
    try:
        _change(_charge())
    finally:
        signals.charge_status_changed.disconnect(slow, sender=Charge)
    assert (len(runs), most[0]) == (1, 1)
    row = Announcement.objects.get()
    assert (row.status, row.attempts, row.lease_until) == ("heard", 1, None)
    assert leases.renewing() == 0
