"""No test decides its verdict by the machine's load: no wall-clock upper bound under 5 s.

Reads every test module's syntax tree and flags comparisons that bound an elapsed time
from above by less than :data:`FLOOR` seconds: ``time.monotonic() - started < 1.5``,
``elapsed <= 0.3`` (a name that says it holds a duration), and the same with the
operands swapped. Such a bound fails on a busy machine for no code reason; deadlines
and back-offs are tested with an injected clock or a margin of an order of magnitude.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import HealthCheck, settings

from tests.hypothesis_profiles import SHARE

FLOOR = 5.0
TESTS = Path(__file__).resolve().parents[1]
CLOCKS = {"monotonic", "perf_counter", "time", "process_time"}
DURATION_NAMES = {"elapsed", "took", "duration", "spent", "wall"}


def _is_clock_reading(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute | ast.Name)
        and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in CLOCKS
        for n in ast.walk(node)
    )


def _is_duration(node: ast.AST) -> bool:
    if isinstance(node, ast.Name) and node.id in DURATION_NAMES:
        return True
    return isinstance(node, ast.BinOp) and _is_clock_reading(node)


def _small_number(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
        and node.value < FLOOR
    )


def upper_bounds(source: str) -> list[int]:
    """Lines of ``source`` that bound a duration from above by less than FLOOR seconds."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:], strict=False):
            below = isinstance(op, ast.Lt | ast.LtE) and _is_duration(left) and _small_number(right)
            above = isinstance(op, ast.Gt | ast.GtE) and _small_number(left) and _is_duration(right)
            if below or above:
                found.append(node.lineno)
    return sorted(found)


def test_the_detector_finds_the_bounds_it_must_and_no_others() -> None:
    flagged = """
assert time.monotonic() - started < 1.5
assert 0.05 < time.perf_counter() - t0 <= 2
assert elapsed < timeout + 0.25 or elapsed <= 0.3
assert 3 > took
"""
    allowed = """
assert time.monotonic() - started >= 0.3
assert time.monotonic() - started < 30
assert elapsed < 60
assert count < 2
assert time.monotonic() < deadline
"""
    assert upper_bounds(flagged) == [2, 3, 4, 5]
    assert upper_bounds(allowed) == []


def test_no_test_bounds_a_wall_clock_duration_under_five_seconds() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for line in upper_bounds(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_hypothesis_never_times_an_example_or_a_draw() -> None:
    # tests/conftest.py loads one of them: the profile every property test inherits.
    for name in SHARE:
        profile = settings.get_profile(name)
        assert profile.deadline is None, name
        assert HealthCheck.too_slow in profile.suppress_health_check, name
