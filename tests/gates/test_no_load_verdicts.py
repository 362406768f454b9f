"""No test decides its verdict by the machine's load: no wall-clock upper bound under 5 s.

Reads every test module's syntax tree and flags comparisons that bound an elapsed time
from above by less than :data:`FLOOR` seconds: ``time.monotonic() - started < 1.5``,
``elapsed <= 0.3`` (a name that says it holds a duration), and the same with the
operands swapped. Such a bound fails on a busy machine for no code reason; deadlines
and back-offs are tested with an injected clock or a margin of an order of magnitude.

It flags deadlines too: a clock reading plus anything (``time.monotonic() + 10``)
anywhere in tests/ but tests/waiting.py. A test that waits on another process, thread
or server waits there, for the event, with the one guard far above any expected time
(a 10 s deadline for a subprocess's event expired on a loaded CI host with the code
right), and reports what the other side was doing when the guard fires.
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


def _is_direct_clock_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in CLOCKS
    )


def deadlines(source: str) -> list[int]:
    """Lines of ``source`` that make a deadline: a clock reading plus something."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and (_is_direct_clock_call(node.left) or _is_direct_clock_call(node.right))
    )


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


def test_the_deadline_detector_finds_a_deadline_in_every_form() -> None:
    flagged = """
deadline = time.monotonic() + 10
deadline = monotonic() + timeout
until = 0.5 + time.perf_counter()
if time.time() + pause >= end: pass
"""
    allowed = """
elapsed = time.monotonic() - started
assert time.monotonic() < deadline
expires = int(time.time()) + 3600
later = clock.now + 5
"""
    assert deadlines(flagged) == [2, 3, 4, 5]
    assert deadlines(allowed) == []


def test_a_planted_deadline_outside_the_waiting_module_fails_the_gate(tmp_path: Path) -> None:
    planted = tmp_path / "tests" / "reliability" / "test_planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(
        "import time\n\n\ndef wait(p):\n    deadline = time.monotonic() + 3\n"
        "    while not p() and time.monotonic() < deadline:\n        time.sleep(0.1)\n"
    )
    (tmp_path / "tests" / "waiting.py").write_text("import time\nend = time.monotonic() + 300\n")
    assert deadline_offenders(tmp_path / "tests") == ["tests/reliability/test_planted.py:5"]


def deadline_offenders(tests: Path) -> list[str]:
    """``path:line`` of each deadline in the test modules under ``tests`` but waiting.py."""
    return [
        f"{path.relative_to(tests.parent)}:{line}"
        for path in sorted(tests.rglob("*.py"))
        if path != tests / "waiting.py"
        for line in deadlines(path.read_text(encoding="utf-8"))
    ]


def test_no_test_waits_with_a_deadline_of_its_own() -> None:
    # tests/waiting.py: wait_until, wait_exit, finish, run, join, wait_event, wait_url.
    assert deadline_offenders(TESTS) == []


def test_hypothesis_never_times_an_example_or_a_draw() -> None:
    # tests/conftest.py loads one of them: the profile every property test inherits.
    for name in SHARE:
        profile = settings.get_profile(name)
        assert profile.deadline is None, name
        assert HealthCheck.too_slow in profile.suppress_health_check, name
