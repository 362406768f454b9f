"""Windows read side by side, pipelined pages, a page budget, and one sync per account.

Readers are threads with connections of their own, so these tests commit
(``transaction=True``); a sync inside the caller's transaction is read by
the caller's thread alone (``test_sync.py``). Real processes killed mid-sync
are in ``tests/reliability/test_sync_faults.py``.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import pytest
from django.db import connection

from django_paycharge import services
from django_paycharge.client.throttle import Throttle
from django_paycharge.exceptions import ServerError, SyncInProgressError
from django_paycharge.models import Charge, SyncCheckpoint, SyncWindow
from django_paycharge.services.sync.windows import MARGIN, Schedule, Window
from tests.waiting import GUARD, join, wait_event, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def gateway_state(fake_gateway):
    return {cid: c["status"] for cid, c in fake_gateway.charges.items()}


def mirror_state():
    return {str(g): s for g, s in Charge.objects.values_list("gateway_id", "status")}


class Arrivals:
    """Wraps the fake's request handler: when each request arrived, and how many at once."""

    def __init__(self, fake_gateway, monkeypatch):
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.log: list[tuple[float, str, str, int]] = []  # (arrived, path, query, status)
        self.now = self.most = self.listed = 0
        handle = fake_gateway.app.handle

        def counting(method, path, query, headers, body, **kwargs):
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
                arrived = time.monotonic()
                self.listed += path.endswith("/charges")
                self.arrived.notify_all()
            try:
                answer = handle(method, path, query, headers, body, **kwargs)
            finally:
                with self.lock:
                    self.now -= 1
            self.log.append((arrived, path, query, answer.status))
            return answer

        monkeypatch.setattr(fake_gateway.app, "handle", counting)

    def lists(self):
        return [row for row in self.log if row[1].endswith("/charges")]

    def wait_for_lists(self, count, timeout):
        """Whether ``count`` list requests have arrived, waiting up to ``timeout`` s."""
        with self.arrived:
            return self.arrived.wait_for(lambda: self.listed >= count, timeout)


@pytest.mark.slow  # 30 requests of half a second
def test_windows_are_read_side_by_side_and_store_every_charge_once(fake_gateway, monkeypatch):
    fake_gateway.seed(3_000)
    # A request far longer than a page's store, even on a busy machine: more windows pay.
    fake_gateway.latency = 0.5
    arrivals = Arrivals(fake_gateway, monkeypatch)
    result = services.sync_charges(full=True, windows=4)
    # SQLite's one writer reads only as many windows at once as keep it busy (test_pace.py).
    least = 4 if connection.vendor == "postgresql" else 2
    assert result.complete and result.windows >= least and result.windows_done == result.windows
    assert result.seen == result.created == 3_000  # each charge in exactly one window
    assert mirror_state() == gateway_state(fake_gateway)
    assert arrivals.most >= 2, "windows were read one at a time"
    bounded = [parse_qs(q) for _, _, q, _ in arrivals.lists() if "to=" in q]
    assert bounded, "no window had an upper bound"
    # A split costs a request or two, never a second reading of the charges.
    assert result.pages <= 30 + 2 * result.windows
    assert not SyncWindow.objects.exists()  # a completed run keeps no windows
    assert SyncCheckpoint.objects.get().high_water == Charge.objects.latest("created_on").created_on


def test_the_next_page_is_requested_while_the_current_one_is_stored(fake_gateway, monkeypatch):
    """Pipelining: page n+1's request reaches the gateway before page n is written."""
    fake_gateway.seed(500)
    arrivals = Arrivals(fake_gateway, monkeypatch)
    writes: list[bool] = []
    original = services.sync.read.upsert_prepared

    def write_once_the_next_page_is_asked_for(*args, **kwargs):
        # A database that stays busy with page n until page n+1's request has arrived:
        # a sync that asked for the next page only after writing would never get there.
        page = len(writes)
        writes.append(page == 4 or arrivals.wait_for_lists(page + 2, timeout=GUARD))
        return original(*args, **kwargs)

    monkeypatch.setattr(
        services.sync.read, "upsert_prepared", write_once_the_next_page_is_asked_for
    )
    assert services.sync_charges(full=True, windows=1).created == 500
    assert len(arrivals.lists()) == 5
    assert writes == [True] * 5


def test_a_failed_run_resumes_without_rereading_finished_windows(fake_gateway, monkeypatch):
    fake_gateway.seed(2_000)
    fake_gateway.latency = 0.01
    calls = {"n": 0}
    original = services.sync.read.upsert_prepared

    def failing_later(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 12:
            raise ServerError("the database went away")
        return original(*args, **kwargs)

    monkeypatch.setattr(services.sync.read, "upsert_prepared", failing_later)
    with pytest.raises(ServerError):
        services.sync_charges(full=True, windows=4)
    monkeypatch.setattr(services.sync.read, "upsert_prepared", original)
    done = list(SyncWindow.objects.filter(done=True))
    left = list(SyncWindow.objects.filter(done=False))
    assert left and SyncCheckpoint.objects.get().in_progress
    stored = Charge.objects.count()
    assert stored == sum(w.rows for w in [*done, *left])
    arrivals = Arrivals(fake_gateway, monkeypatch)
    result = services.sync_charges(full=True, windows=4)
    assert result.created == 2_000 - stored and result.complete
    assert mirror_state() == gateway_state(fake_gateway)
    earliest = datetime.min.replace(tzinfo=UTC)
    for _, _, query, _ in arrivals.lists():
        asked = parse_qs(query)
        if "from" not in asked:
            continue  # only the first window starts with no bound, and it is not done
        start = datetime.fromisoformat(asked["from"][0]) + MARGIN  # asked a second early
        for window in done:  # nothing asked from inside a finished window
            inside = (window.start or earliest) <= start and (
                window.end is None or start < window.end
            )
            assert not inside, (start, window.start, window.end)


def test_charges_created_or_changed_during_a_sync_are_never_missed(fake_gateway):
    fake_gateway.seed(1_500)
    fake_gateway.latency = 0.01
    awaiting = [cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting"]
    token = fake_gateway.create_transaction_token("konbini")["id"]
    stop = threading.Event()
    created: list[str] = []

    def meanwhile():
        for n in range(40):
            if stop.is_set():
                return
            created.append(fake_gateway.create_charge(token, amount=100 + n)["id"])
            if n < len(awaiting):
                fake_gateway.complete(awaiting[n])

    thread = threading.Thread(target=meanwhile)
    thread.start()
    try:
        services.sync_charges(full=True, windows=4)
    finally:
        stop.set()
        thread.join()
    assert created
    services.sync_charges(windows=4)  # the next incremental run
    assert mirror_state() == gateway_state(fake_gateway)


def test_a_page_budget_leaves_the_rest_to_the_next_run(fake_gateway):
    fake_gateway.seed(1_000)
    first = services.sync_charges(max_pages=3, windows=1)
    assert not first.complete and first.pages == 3
    assert SyncCheckpoint.objects.get().in_progress
    second = services.sync_charges(windows=4)
    assert second.complete and first.created + second.created == 1_000
    assert mirror_state() == gateway_state(fake_gateway)


def test_a_second_sync_of_the_account_is_refused_or_waits(fake_gateway, monkeypatch):
    fake_gateway.seed(300)
    fake_gateway.latency = 0.02
    entered, refused = threading.Event(), threading.Event()
    original = services.sync.read.upsert_prepared

    def slow_write(*args, **kwargs):
        # The first sync holds its lock until the second has been refused: an event, not
        # a 0.2 s page that a slow host could outlast before the second sync started.
        entered.set()
        refused.wait(GUARD)
        return original(*args, **kwargs)

    monkeypatch.setattr(services.sync.read, "upsert_prepared", slow_write)
    errors: list[BaseException] = []

    def first_sync():
        try:
            services.sync_charges(windows=1)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=first_sync)
    thread.start()
    try:
        wait_event(entered, "the first sync to write a page")
        with pytest.raises(SyncInProgressError) as refusal:
            services.sync_charges()
        assert "default" in str(refusal.value) and "pid" in str(refusal.value)
    finally:
        refused.set()
    waited = services.sync_charges(wait=GUARD)  # runs once the first one has finished
    join(thread, "the first sync")
    assert errors == []
    assert waited.complete
    assert mirror_state() == gateway_state(fake_gateway)


def test_a_429_pauses_every_window_for_its_retry_after(fake_gateway, monkeypatch):
    """The 429 comes once the windows read side by side; none sends until its pause ends.

    (On SQLite the windows take turns to keep its one writer busy, so it is the
    PostgreSQL pass that sees other windows wait.)
    """
    fake_gateway.seed(2_000)
    fake_gateway.latency = 0.01
    arrivals = Arrivals(fake_gateway, monkeypatch)

    def limit_once_the_windows_read():  # not before: the first pages are one window's
        assert arrivals.wait_for_lists(8, timeout=GUARD)  # ends when they arrive
        fake_gateway.add_fault(
            "GET", r"/charges$", action="status", status=429, retry_after=1, count=1
        )

    # Seen from the client's side, where the pause is kept: each request's entry into the
    # shared limit and its leaving it to be sent, and the end of the pause the 429 set.
    sent: list[tuple[float, float]] = []
    pauses: list[tuple[float, float]] = []
    acquire, release = Throttle.acquire, Throttle.release

    def recording_acquire(self, sleep, *, paused=False):
        entered = time.monotonic()
        acquire(self, sleep, paused=paused)
        sent.append((entered, time.monotonic()))

    def recording_release(self, *, limited=False, pause=0.0):
        release(self, limited=limited, pause=pause)
        if limited:
            pauses.append((time.monotonic(), self._resume_at))

    monkeypatch.setattr(Throttle, "acquire", recording_acquire)
    monkeypatch.setattr(Throttle, "release", recording_release)
    limiter = threading.Thread(target=limit_once_the_windows_read)
    limiter.start()
    assert services.sync_charges(full=True, windows=4).created == 2_000
    limiter.join()
    [(limited, resume_at)] = pauses
    after = [(entered, left) for entered, left in sent if entered > limited]
    # Requests already past the limit may still go; none that came to it after the 429,
    # whichever window sent it, left before the pause's end.
    assert after and all(left >= resume_at for _, left in after), (resume_at, after[:5])


# -- the pieces ---------------------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_dense_window_is_cut_in_whole_seconds_for_the_idle_readers():
    window = Window(T0, T0 + timedelta(hours=10), position=T0 + timedelta(hours=1))
    window.saw(T0, 1_000)  # 1,000 charges in the first hour: ~9,000 left
    points = window.split_points(T0 + timedelta(days=1), idle=3)
    assert len(points) == 3 and points == sorted(points)
    assert window.position is not None and window.end is not None
    assert all(p.microsecond == 0 and window.position < p < window.end for p in points)
    assert window.split_points(T0, idle=0) == []  # nobody to give the rest to


def test_a_sparse_window_is_not_split():
    window = Window(None, None, position=T0 + timedelta(hours=1))
    window.saw(T0, 100)  # 100 an hour, and 10 minutes left: ~17 charges
    assert window.split_points(T0 + timedelta(hours=1, minutes=10), idle=7) == []


def test_a_window_owns_its_start_not_its_end_and_asks_from_a_second_before():
    window = Window(T0, T0 + timedelta(hours=1))
    assert window.owns(T0) and not window.owns(T0 + timedelta(hours=1))
    assert not window.owns(T0 - timedelta(microseconds=1)) and window.owns(None)
    assert window.filters() == {"from_": T0 - timedelta(seconds=1), "to": T0 + timedelta(hours=1)}
    assert window.passed(T0 + timedelta(hours=1)) and not window.passed(None)


def test_the_schedule_ends_when_no_reader_can_split_any_more():
    first = Window(None, None)
    schedule = Schedule([first], limit=8)
    assert schedule.take() is first
    taken: list[Window | None] = []
    waiter = threading.Thread(target=lambda: taken.append(schedule.take()))
    waiter.start()
    wait_until(lambda: schedule.idle() == 1, "the second reader to wait", every=0.01)
    assert schedule.idle() == 1  # waits: the window being read may still be split
    second = Window(T0, None)
    schedule.add([second])
    join(waiter, "the second reader to take the new window")
    assert taken == [second]
    schedule.done(finished=True)
    schedule.done(finished=True)
    assert schedule.take() is None and schedule.finished == 2 == schedule.total
