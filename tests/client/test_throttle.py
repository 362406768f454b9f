"""One limit for all of a client's requests: a 429 pauses them all and halves those in flight."""

from __future__ import annotations

import threading
from typing import Any

import responses

from django_paycharge.client import PayChargeClient, Prefetcher
from django_paycharge.client.throttle import Throttle
from django_paycharge.exceptions import InvalidResponseError
from tests.waiting import join, wait_event, wait_until

from .conftest import BASE, STORE, SleepRecorder, charge_json

LIST_URL = f"{BASE}/stores/{STORE}/charges"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_429_pauses_every_request_and_halves_those_in_flight() -> None:
    clock, sleeps = Clock(), list[float]()
    throttle = Throttle(8, clock=clock)
    for _ in range(4):
        throttle.acquire(sleeps.append)
    throttle.release(limited=True, pause=2.0)  # one of four in flight came back 429
    assert throttle.allowed == 2
    for _ in range(3):
        throttle.release()
    clock.now += 0.5
    throttle.acquire(sleeps.append)  # another thread's next request waits out the pause
    assert sleeps == [1.5]
    throttle.acquire(sleeps.append, paused=True)  # the one that got the 429 already waited
    assert sleeps == [1.5]


def test_the_limit_grows_back_one_per_run_of_successes() -> None:
    throttle = Throttle(4)
    throttle.acquire(lambda s: None)
    throttle.acquire(lambda s: None)
    throttle.release(limited=True)
    assert throttle.allowed == 1
    throttle.release()  # the other one succeeded
    assert throttle.allowed == 2
    for _ in range(2 + 3):
        throttle.acquire(lambda s: None)
        throttle.release()
    assert throttle.allowed == 4 == throttle.limit


def test_a_thread_waits_for_a_place_while_the_limit_is_reached() -> None:
    throttle = Throttle(1)
    throttle.acquire(lambda s: None)
    entered = threading.Event()

    def second() -> None:
        throttle.acquire(lambda s: None)
        entered.set()

    thread = threading.Thread(target=second)
    thread.start()
    # Not a window of time: the thread is seen waiting on the throttle's condition, then
    # found not to have entered (a 0.1 s look passed whenever the thread started late).
    waiters = vars(throttle._cond)["_waiters"]
    wait_until(lambda: len(waiters) == 1, "the second thread to wait for a place", every=0.01)
    assert not entered.is_set()
    throttle.release()
    wait_event(entered, "the second thread to enter once a place is free")
    join(thread, "the second thread")


def test_the_client_pauses_its_next_request_after_a_429(
    client: PayChargeClient, rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    rsps.get(LIST_URL, status=429, headers={"Retry-After": "3"})
    rsps.get(LIST_URL, json={"items": [], "has_more": False})
    rsps.get(LIST_URL, json={"items": [], "has_more": False})
    client.charges.list_page(store_id=STORE)
    assert sleeps.calls == [3.0]  # the retry, once
    client.charges.list_page(store_id=STORE)  # the next request (any thread's) waits too
    assert len(sleeps.calls) == 2 and 2.9 < sleeps.calls[1] <= 3.0


def test_a_raw_page_knows_its_next_cursor_before_it_is_typed(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    last = charge_json(id="66666666-6666-4666-8666-666666666666")
    body: dict[str, Any] = {"items": [charge_json(), last, {"odd": 1}], "has_more": True}
    rsps.get(LIST_URL, json=body)
    raw = client.charges.fetch_page(store_id=STORE)
    # The cursor is the last usable id; nothing is typed yet, so the odd item costs nothing.
    assert raw.cursor == last["id"] and raw.has_more and len(raw.items) == 3
    body["items"] = body["items"][:2]
    rsps.replace(responses.GET, LIST_URL, json=body)
    assert client.charges.fetch_page(store_id=STORE).parse() == client.charges.list_page(
        store_id=STORE
    )


def test_a_prefetcher_requests_the_next_page_while_the_caller_holds_one() -> None:
    asked: list[str | None] = []

    def fetch(cursor: str | None) -> str:
        asked.append(cursor)
        return f"page-after-{cursor}"

    def follow(page: str) -> str | None:
        return None if len(asked) >= 3 else f"c{len(asked)}"

    got = []
    for page, last in Prefetcher(fetch, follow, None):
        got.append((page, last))
        if len(got) == 1:
            # Page 2 is asked for while we still hold page 1.
            wait_until(lambda: len(asked) >= 2, "the prefetcher to ask for page 2", every=0.01)
            assert asked[:2] == [None, "c1"]
    assert got == [("page-after-None", False), ("page-after-c1", False), ("page-after-c2", True)]


def test_a_prefetcher_hands_its_errors_to_the_caller_and_stops_on_a_repeated_cursor() -> None:
    seen = []
    try:
        for page, _ in Prefetcher(lambda cursor: cursor, lambda page: "same", None):
            seen.append(page)
    except InvalidResponseError as exc:
        assert "same page twice" in str(exc)
    else:
        raise AssertionError("no error")
    assert seen == [None]  # the page that pointed back was never handed out
