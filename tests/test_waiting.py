"""tests/waiting.py: a wait returns the event's value, or fails saying what it waited for."""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest

from tests import waiting


class _Ended:
    """A process that has exited (what ``running`` reads of a ``Popen``)."""

    pid, returncode = 4242, 3

    def poll(self) -> int:
        return self.returncode


def test_a_wait_returns_the_conditions_value_once_it_holds() -> None:
    seen: list[int] = []

    def third_time() -> list[int] | None:
        seen.append(1)
        return seen if len(seen) == 3 else None

    assert waiting.wait_until(third_time, "the third look", every=0) == [1, 1, 1]


def test_past_the_guard_the_failure_names_the_event_and_what_the_other_side_said() -> None:
    # A condition that never holds: the guard is the only way out (the real one is 300 s).
    with pytest.raises(pytest.fail.Exception) as failed:
        waiting.wait_until(lambda: False, "the row", guard=0, every=0, diagnose=lambda: "log: x")
    assert "still waiting for the row (waited" in str(failed.value)
    assert str(failed.value).endswith("log: x")


def test_a_process_that_ended_fails_the_wait_at_once_with_its_exit_status() -> None:
    ended = cast(Any, _Ended())
    with pytest.raises(pytest.fail.Exception) as failed:
        waiting.wait_until(lambda: False, "the claim", running=[ended], diagnose=lambda: "rows")
    assert "pid 4242 exited with 3 before the claim" in str(failed.value)


def test_a_diagnosis_that_breaks_does_not_hide_the_failure() -> None:
    def broken() -> str:
        raise RuntimeError("no database")

    with pytest.raises(pytest.fail.Exception) as failed:
        waiting.wait_event(threading.Event(), "the lock", guard=0, diagnose=broken)
    assert "still waiting for the lock" in str(failed.value)
    assert "the diagnosis failed: RuntimeError('no database')" in str(failed.value)
