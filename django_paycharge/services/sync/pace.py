"""How many windows a sync run reads at once when its database takes one writer at a time.

On SQLite the readers take turns to store a page, so the run can go no
faster than one page per store. One window whose next page is fetched
while this one is stored (:class:`~django_paycharge.client.Prefetcher`)
delivers a page per request time; ``request / store`` windows keep the
writer busy. More only make the readers compete with the writer for the
GIL: with a gateway nearby, eight windows wrote more slowly than one; with a
distant one the same ratio asks for several (the figures: docs/benchmarks.md,
"How many windows: SQLite's pace").

:class:`Pace` keeps the latest request and store times and turns them into
that number, between one and the run's most (``SYNC_WINDOWS``).
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque

#: Requests and stores remembered: enough for a median that one slow page does not move.
SAMPLES = 16
#: Windows beyond the bare ratio, as a share: pages arrive unevenly.
HEADROOM = 1.25


class Pace:
    """Request and store times of a run's latest pages, and the windows they call for."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._lock = threading.Lock()
        self._requests: deque[float] = deque(maxlen=SAMPLES)
        self._stores: deque[float] = deque(maxlen=SAMPLES)

    def requested(self, seconds: float) -> None:
        """A page request took ``seconds`` (from any reader's request thread)."""
        with self._lock:
            self._requests.append(seconds)

    def stored(self, seconds: float) -> None:
        """Storing a page took ``seconds``, its turn at the writer."""
        with self._lock:
            self._stores.append(seconds)

    def windows(self) -> int:
        """Windows to read at once: one until a page has been fetched and stored."""
        with self._lock:
            if not self._requests or not self._stores:
                return 1
            request = statistics.median(self._requests)
            store = statistics.median(self._stores)
        if store <= 0:
            return self.most
        return max(1, min(self.most, math.ceil(HEADROOM * request / store)))
