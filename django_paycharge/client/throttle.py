"""The limit every request of one client shares: how many at once, and a pause after 429.

A sync reads several windows side by side through one client. When the
gateway answers 429, one window backing off alone would not help: the others
would keep the rate up. So a 429 pauses every request of the client until its
``Retry-After`` has passed (or the retry delay, when there is none), and
halves how many may be in flight (at least one); each run of successes as
long as the current limit raises it by one again, up to the client's pool size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Throttle:
    """Requests in flight, at most ``allowed`` (between 1 and ``limit``)."""

    __slots__ = ("_clock", "_cond", "_in_flight", "_resume_at", "_successes", "allowed", "limit")

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.allowed = limit
        self._clock = clock
        self._cond = threading.Condition()
        self._in_flight = 0
        self._resume_at = 0.0
        self._successes = 0

    def acquire(self, sleep: Callable[[float], object], *, paused: bool = False) -> None:
        """Wait for a free place, then for the end of a pause the gateway asked for.

        ``paused``: the caller has just slept through the pause its own 429 asked for.
        """
        with self._cond:
            while self._in_flight >= self.allowed:
                self._cond.wait()
            self._in_flight += 1
            pause = self._resume_at - self._clock()
        if pause > 0 and not paused:
            sleep(pause)

    def release(self, *, limited: bool = False, pause: float = 0.0) -> None:
        """Give the place back; ``limited``: a 429, asking for a ``pause`` of that many seconds."""
        with self._cond:
            if limited:
                self.allowed = max(1, self._in_flight // 2)
                self._successes = 0
                self._resume_at = max(self._resume_at, self._clock() + pause)
            elif self.allowed < self.limit:
                self._successes += 1
                if self._successes >= self.allowed:
                    self.allowed += 1
                    self._successes = 0
            self._in_flight -= 1
            self._cond.notify_all()
