"""Creation-time windows of a sync run, and the schedule that hands them to its readers.

A run starts with one window from its lower bound, open-ended. As soon as a
window's first pages show how dense its range is, and readers are idle, the
rest of its range is split into new windows, read side by side; a window
that turns out dense later is split again whenever a reader is left
without work. The last window keeps the open end, so charges created while
the run goes on are read too.

Boundaries are whole seconds, and a window asks the gateway from one second
before its start: whatever precision the gateway compares creation times
at, and whether its bounds include their ends, every charge lands in some
window's answer; :meth:`Window.owns` then keeps each charge in exactly one
window.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

PAGE_SIZE = 100
#: How much earlier than its start a window asks the gateway (see the module docstring).
MARGIN = timedelta(seconds=1)
#: A split leaves each new window at least this many charges (by estimate).
MIN_SPLIT_ROWS = 2 * PAGE_SIZE


@dataclass(eq=False)
class Window:
    """``[start, end)`` of creation times (None: unbounded) and how far it was read.

    ``pk`` is its :class:`~django_paycharge.models.SyncWindow` row (None when
    the read keeps no checkpoint). ``first`` and ``read``: the creation time
    of the first charge this process read in it, and how many it read since,
    which give the window's density.
    """

    start: datetime | None
    end: datetime | None
    cursor: str = ""
    position: datetime | None = None
    pages: int = 0
    rows: int = 0
    pk: int | None = None
    first: datetime | None = None
    read: int = 0

    def filters(self) -> dict[str, Any]:
        """The ``from``/``to`` filters of its list requests."""
        bounds: dict[str, Any] = {}
        if self.start is not None:
            bounds["from_"] = self.start - MARGIN
        if self.end is not None:
            bounds["to"] = self.end
        return bounds

    def owns(self, created: datetime | None) -> bool:
        """Whether a charge created then belongs here (one without a time stays where read)."""
        if created is None:
            return True
        return (self.start is None or created >= self.start) and (
            self.end is None or created < self.end
        )

    def passed(self, created: datetime | None) -> bool:
        """Whether a charge created then lies beyond the end: nothing more to read."""
        return created is not None and self.end is not None and created >= self.end

    def saw(self, first: datetime | None, count: int) -> None:
        """Count ``count`` charges read in a page whose first was created at ``first``."""
        if self.first is None:
            self.first = first
        if self.first is not None:
            self.read += count

    def split_points(self, until: datetime, idle: int) -> list[datetime]:
        """Where to cut the rest of the range for ``idle`` readers without work.

        ``until`` stands for an open end (the run's start: later charges are
        few). Returns the new boundaries, in order, or none when the rest is
        too sparse to be worth a request per new window.
        """
        here, end = self.position, self.end or until
        if idle < 1 or here is None or self.first is None or end - here < 2 * MARGIN:
            return []
        seen = (here - self.first).total_seconds()
        rest = (end - here).total_seconds()
        expected = self.read * rest / seen if seen > 0 else float("inf")
        pieces = min(idle + 1, int(min(expected, 1e9) // MIN_SPLIT_ROWS))
        if pieces < 2:
            return []
        points = {_whole_second(here + (end - here) * k / pieces) for k in range(1, pieces)}
        return sorted(p for p in points if here < p < end)


def _whole_second(value: datetime) -> datetime:
    return value.replace(microsecond=0)


class Schedule:
    """Windows waiting for a reader; readers wait while others may still split theirs.

    ``limit``: how many windows are read at once, at most (all readers unless
    :meth:`set_limit` says fewer); the other readers wait.
    """

    def __init__(self, windows: list[Window], limit: int) -> None:
        self._cond = threading.Condition()
        self._waiting = deque(windows)
        self._reading = 0
        self._idle = 0
        self._limit = max(1, limit)
        self.stopped = False
        self.total = len(windows)
        self.finished = 0

    def take(self) -> Window | None:
        """The next window to read, or None when the run is over (or stopped)."""
        with self._cond:
            while (
                self._reading
                and (not self._waiting or self._reading >= self._limit)
                and not self.stopped
            ):
                self._idle += 1
                self._cond.wait()
                self._idle -= 1
            if self.stopped or not self._waiting:
                self._cond.notify_all()
                return None
            self._reading += 1
            return self._waiting.popleft()

    def add(self, windows: list[Window]) -> None:
        """New windows split off one being read."""
        with self._cond:
            self._waiting.extend(windows)
            self.total += len(windows)
            self._cond.notify_all()

    def done(self, *, finished: bool) -> None:
        """A reader let its window go (``finished``: read to its end)."""
        with self._cond:
            self._reading -= 1
            self.finished += finished
            self._cond.notify_all()

    def set_limit(self, limit: int) -> None:
        """Read at most ``limit`` windows at once from now on (windows being read go on)."""
        with self._cond:
            if limit != self._limit:
                self._limit = max(1, limit)
                self._cond.notify_all()

    def idle(self) -> int:
        """Readers waiting for a window right now that may start one under the limit."""
        with self._cond:
            return max(0, min(self._idle, self._limit - self._reading - len(self._waiting)))

    def stop(self) -> None:
        """No more windows: readers finish the page they hold and return."""
        with self._cond:
            self.stopped = True
            self._cond.notify_all()
