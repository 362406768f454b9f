"""The one exponential back-off: every wait that grows after a failure is spelled here.

The client's retries, the ask-again rounds of a request whose outcome is
unknown, the transient-database retry, ``wait_for_charge``'s pauses, and the
retries of webhook deliveries and signal receivers all wait ``base * 2**n``
seconds at most after their n-th failure (counting from 0), never more than
``cap``. This module is the lowest layer they share (no Django, no settings),
so each site only chooses its numbers and its jitter.

Jitter spreads out the callers that failed together, so that they do not come
back together:

- ``"full"``: anywhere from 0 to the ceiling. Spreads them the most; the right
  default when many clients may fail at once (a gateway outage).
- ``"equal"``: from half the ceiling to the ceiling. Still spread, but the
  waits add up to a known minimum: for loops that must not come back at once
  (asking a struggling gateway again, a write that lost a race for a lock).
- ``"none"``: the ceiling itself, for a lone waiter whose waits a caller
  reasons about (one customer's ``wait_for_charge``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from secrets import SystemRandom
from typing import Literal

#: A float in ``[0, 1)``; :mod:`secrets` so that nothing mistakes it for a weak one.
system_random: Callable[[], float] = SystemRandom().random

Jitter = Literal["full", "equal", "none"]
JITTERS: tuple[Jitter, ...] = ("full", "equal", "none")

# 2**64 seconds is past any cap; larger exponents would only overflow a float.
_MAX_EXPONENT = 64


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait after the n-th failure (``attempt`` counts from 0).

    ``random`` returns a float in ``[0, 1)``; tests pass their own to make the
    waits exact.
    """

    base: float
    cap: float
    jitter: Jitter = "full"
    random: Callable[[], float] = field(default=system_random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.jitter not in JITTERS:
            raise ValueError(f"jitter must be one of {', '.join(JITTERS)}, not {self.jitter!r}")
        if not (self.base >= 0 and self.cap >= 0):  # NaN fails too
            raise ValueError("base and cap must be numbers >= 0")

    def ceiling(self, attempt: int) -> float:
        """The longest wait after failure number ``attempt``: ``base * 2**attempt``, capped."""
        return float(min(self.cap, self.base * 2 ** min(max(attempt, 0), _MAX_EXPONENT)))

    def delay(self, attempt: int) -> float:
        """The wait after failure number ``attempt``, jittered as the back-off says."""
        ceiling = self.ceiling(attempt)
        if self.jitter == "full":
            return self.random() * ceiling
        if self.jitter == "equal":
            return ceiling / 2 + self.random() * ceiling / 2
        return ceiling
