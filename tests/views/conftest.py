"""Fixtures of the view tests."""

from __future__ import annotations

import pytest

from django_paycharge import conf
from django_paycharge.services.webhooks import drain


class Clock:
    """A monotonic clock the test moves: the drain window reads it, its sleeps move it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def drain_clock(monkeypatch):
    """Time as the drain window sees it, stopped until the test (or a drain's wait) moves it."""
    clock = Clock()
    monkeypatch.setattr(drain, "_clock", clock)
    monkeypatch.setattr(drain, "_sleep", clock.sleep)
    monkeypatch.setattr(drain, "_drain_covers", conf.SettingsCache())
    return clock
