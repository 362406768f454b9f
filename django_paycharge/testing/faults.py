"""Faults injected on demand: error statuses, latency, dropped connections, broken bodies.

Faults are checked in the order they were added; the first one that matches
the request (method and a ``re.search`` of the path) and fires is applied.
With ``probability``, each fault draws from its own ``random.Random(seed)``,
so a run is reproducible whatever other faults exist.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any

ACTIONS = frozenset({"status", "latency", "drop_before", "drop_after", "malformed"})


@dataclass(slots=True)
class Fault:
    """One fault rule. ``count`` None means forever; it counts down when it fires."""

    method: str
    path_regex: str
    action: str
    status: int | None = None
    retry_after: int | None = None
    latency: float | None = None
    count: int | None = None
    probability: float | None = None
    body: Any = None
    seed: int = 0
    fired: int = 0
    _pattern: re.Pattern[str] = field(init=False, repr=False)
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown fault action {self.action!r}; use one of {sorted(ACTIONS)}")
        if self.action == "status" and self.status is None:
            raise ValueError("a 'status' fault needs status=")
        if self.action == "latency" and self.latency is None:
            raise ValueError("a 'latency' fault needs latency= (seconds)")
        if self.probability is not None and not 0 <= self.probability <= 1:
            raise ValueError("probability must be between 0 and 1")
        self.method = self.method.upper()
        self._pattern = re.compile(self.path_regex)
        self._rng = random.Random(self.seed)  # noqa: S311 - reproducible, not secret

    def matches(self, method: str, path: str) -> bool:
        """True when the rule covers this request (not whether it fires)."""
        if self.method not in ("*", method):
            return False
        return self._pattern.search(path) is not None

    def to_json(self) -> dict[str, Any]:
        """The rule as ``GET /_fake/faults`` lists it."""
        return {
            "method": self.method,
            "path_regex": self.path_regex,
            "action": self.action,
            "status": self.status,
            "retry_after": self.retry_after,
            "latency": self.latency,
            "count": self.count,
            "probability": self.probability,
            "fired": self.fired,
        }


class FaultSet:
    """The active faults; thread-safe. A latency fault adds to the state's ``latency``."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(
        self,
        method: str,
        path_regex: str,
        *,
        action: str,
        status: int | None = None,
        retry_after: int | None = None,
        latency: float | None = None,
        count: int | None = None,
        probability: float | None = None,
        body: Any = None,
        seed: int | None = None,
    ) -> Fault:
        """Add a rule; see the module docstring for matching."""
        fault = Fault(
            method,
            path_regex,
            action,
            status=status,
            retry_after=retry_after,
            latency=latency,
            count=count,
            probability=probability,
            body=body,
            seed=self.seed if seed is None else seed,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._faults.clear()

    def list(self) -> list[Fault]:
        """The rules still active."""
        with self._lock:
            return list(self._faults)

    def pick(self, method: str, path: str) -> Fault | None:
        """The fault to apply to this request, consuming one of its ``count``."""
        with self._lock:
            for fault in self._faults:
                if not fault.matches(method, path):
                    continue
                if fault.probability is not None and fault._rng.random() >= fault.probability:
                    continue
                fault.fired += 1
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                return fault
        return None
