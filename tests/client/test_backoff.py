"""The one back-off: its ceilings, its three jitters, and that no other is written beside it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import django_paycharge
from django_paycharge.client.backoff import Backoff


def _fixed(value: float):
    return lambda: value


def test_the_ceiling_doubles_from_the_base_up_to_the_cap() -> None:
    backoff = Backoff(0.5, 8.0)
    assert [backoff.ceiling(n) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_full_jitter_scales_the_random_fraction_and_caps_it() -> None:
    assert Backoff(0.5, 8.0, random=_fixed(1.0)).delay(0) == 0.5
    assert Backoff(0.5, 8.0, random=_fixed(0.5)).delay(3) == 2.0
    assert Backoff(0.5, 8.0, random=_fixed(1.0)).delay(10) == 8.0
    assert Backoff(0.5, 8.0, random=_fixed(0.0)).delay(10) == 0.0


@pytest.mark.parametrize(("fraction", "expected"), [(0.0, 2.0), (0.5, 3.0), (1.0, 4.0)])
def test_equal_jitter_keeps_half_the_ceiling(fraction: float, expected: float) -> None:
    assert Backoff(1.0, 30.0, jitter="equal", random=_fixed(fraction)).delay(2) == expected


def test_no_jitter_is_the_ceiling_and_asks_no_random() -> None:
    def never() -> float:
        raise AssertionError("no jitter: no random number either")

    backoff = Backoff(0.1, 2.0, jitter="none", random=never)
    assert [backoff.delay(n) for n in range(6)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0])


def test_the_random_source_is_asked_once_per_delay() -> None:
    draws = iter([0.25, 0.75])
    backoff = Backoff(2.0, 100.0, random=lambda: next(draws))
    assert [backoff.delay(1), backoff.delay(1)] == [1.0, 3.0]


def test_the_default_random_source_stays_within_the_bounds() -> None:
    full, equal = Backoff(1.0, 16.0), Backoff(1.0, 16.0, jitter="equal")
    for attempt in range(8):
        ceiling = full.ceiling(attempt)
        assert all(0.0 <= full.delay(attempt) <= ceiling for _ in range(50))
        assert all(ceiling / 2 <= equal.delay(attempt) <= ceiling for _ in range(50))


def test_a_long_run_of_failures_stays_at_the_cap() -> None:
    backoff = Backoff(0.5, 8.0, jitter="none")
    assert backoff.delay(10_000) == 8.0  # no OverflowError from 2**10000 as a float
    assert backoff.delay(-1) == 0.5


@pytest.mark.parametrize(
    "arguments",
    [
        {"base": -1.0, "cap": 1.0},
        {"base": 1.0, "cap": float("nan")},
        {"base": 1.0, "cap": 1.0, "jitter": "decorrelated"},
    ],
)
def test_nonsense_is_refused(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Backoff(**arguments)


# Exponentiation by a variable or a doubling assignment: how a back-off is spelled.
_GROWTH = re.compile(r"\b2\s*\*\*\s*[A-Za-z_(]|\*=\s*2\b|\b\w+\s*\*\s*2\s*,\s*\w*(MAX|max|cap)")


def test_no_other_back_off_is_written_in_the_package() -> None:
    package = Path(django_paycharge.__file__).parent
    found = [
        f"{path.relative_to(package)}:{number}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "backoff.py" and "testing" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _GROWTH.search(line) and not line.lstrip().startswith(("#", "``", "-"))
    ]
    assert found == [], "use django_paycharge.client.backoff.Backoff instead"
