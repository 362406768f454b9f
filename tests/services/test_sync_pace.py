"""How many windows a sync reads at once on SQLite: enough to keep its one writer busy.

More windows than that only make the readers compete with the writer for
the GIL (docs/benchmarks.md, SQLite at 0 ms); fewer leave it waiting for the
gateway. PostgreSQL, which stores pages side by side, reads ``windows`` at
once whatever the pace (``test_sync_windows.py``).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from django_paycharge import services
from django_paycharge.services.sync.pace import Pace
from django_paycharge.services.sync.windows import Schedule, Window
from tests.waiting import join, wait_until


def test_one_window_until_a_page_has_been_fetched_and_stored():
    pace = Pace(8)
    assert pace.windows() == 1
    pace.requested(0.150)
    assert pace.windows() == 1  # no store yet: its cost is unknown
    pace.stored(0.010)
    assert pace.windows() == 8  # 1.25 x 150 / 10 = 19, at most 8


@pytest.mark.parametrize(
    ("request_ms", "store_ms", "most", "windows"),
    [
        (4, 9, 8, 1),  # the gateway beside us: the next page is ready before the store ends
        (9, 9, 8, 2),  # as fast as the store: one more for pages that arrive unevenly
        (55, 9, 8, 8),  # 50 ms away: 1.25 x 55 / 9 = 7.6
        (35, 9, 8, 5),  # 30 ms away
        (55, 9, 3, 3),  # never more than the run's most
        (55, 25, 8, 3),  # a slower writer (a busy host) needs fewer
    ],
)
def test_enough_windows_to_keep_the_writer_busy(request_ms, store_ms, most, windows):
    pace = Pace(most)
    for _ in range(3):
        pace.requested(request_ms / 1000)
        pace.stored(store_ms / 1000)
    assert pace.windows() == windows


def test_one_slow_page_does_not_move_the_pace():
    pace = Pace(8)
    for _ in range(5):
        pace.requested(0.004)
        pace.stored(0.009)
    pace.requested(2.0)  # one request that hung
    pace.stored(0.0001)  # one page with nothing to write
    assert pace.windows() == 1


def test_the_schedule_keeps_readers_beyond_its_limit_waiting():
    first, second = Window(None, None), Window(None, None)
    schedule = Schedule([first, second], limit=1)
    assert schedule.take() is first
    taken: list[Window | None] = []
    waiter = threading.Thread(target=lambda: taken.append(schedule.take()))
    waiter.start()
    wait_until(lambda: schedule._idle, "the second reader to wait", every=0.01)
    assert schedule._idle == 1 and taken == []  # a window waits, but the limit is reached
    assert schedule.idle() == 0  # nobody to split the window being read for
    schedule.set_limit(2)
    join(waiter, "the second reader to take its window")
    assert taken == [second]
    schedule.done(finished=True)
    schedule.done(finished=True)
    assert schedule.take() is None and schedule.finished == 2


def test_idle_readers_count_once_for_windows_already_waiting():
    schedule = Schedule([Window(None, None)], limit=8)
    schedule.take()
    schedule._idle = 7  # as if seven readers waited (take() would block this thread)
    assert schedule.idle() == 7
    schedule.add([Window(None, None), Window(None, None)])
    assert schedule.idle() == 5  # two of them will take the new windows
    schedule.set_limit(3)
    assert schedule.idle() == 0  # one read and two waiting: the limit is reached


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="runs in the SQLite pass")
def test_sqlite_reads_one_window_when_the_store_is_the_slower_part(fake_gateway, monkeypatch):
    """A gateway answering at once and a slow writer: more windows could not help."""
    fake_gateway.seed(1_000)
    original = services.sync.read.upsert_prepared

    def slow_write(*args, **kwargs):
        time.sleep(0.05)
        return original(*args, **kwargs)

    monkeypatch.setattr(services.sync.read, "upsert_prepared", slow_write)
    result = services.sync_charges(full=True, windows=8)
    assert result.created == 1_000 and result.complete
    assert result.windows == 1, result


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow  # 20 requests of half a second
def test_a_distant_gateway_gets_more_windows(fake_gateway):
    fake_gateway.seed(2_000)
    # Far longer than a page's store, even on a busy machine.
    fake_gateway.latency = 0.5
    result = services.sync_charges(full=True, windows=8)
    assert result.created == 2_000 and result.complete
    assert result.windows >= (8 if connection.vendor == "postgresql" else 3), result
