"""A module of the slow folders runs on one pytest-xdist worker, as tests/conftest.py asks.

Its module fixtures (the demo shop, a shop stack, a gateway server) start once only if
``--dist loadgroup`` keeps the module together. pytest 9.2 broke that without a word
(pytest-xdist issue 1386): every demo test's worker started its own demo. This runs two
tests of one such module on two workers, with the pinned tools, and reads where each ran.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.waiting import run

TESTS = Path(__file__).resolve().parent


@pytest.mark.db_independent
@pytest.mark.slow
def test_the_tests_of_a_slow_folders_module_run_on_one_worker() -> None:
    selected = "table_shows_the_floor or reads_cpu_time_of_a_process_tree"
    done = run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-n", "2", "--dist", "loadgroup", "-v", "-k", selected,
         str(TESTS / "bench" / "test_smoke.py")],
        cwd=TESTS.parent, env={**os.environ, "PYTEST_ADDOPTS": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(r"^\[(gw\d+)\] .*PASSED (\S+)", done.stdout, re.MULTILINE)
    assert len(ran) == 2, done.stdout
    assert len({worker for worker, _ in ran}) == 1, ran
    assert all(test.endswith("@bench/test_smoke.py") for _, test in ran), ran


class _Item:
    def __init__(self, nodeid: str, *, slow: bool = False, group: str = "") -> None:
        self.nodeid = nodeid
        self.marks = {"slow": pytest.mark.slow.mark} if slow else {}
        if group:
            self.marks["xdist_group"] = pytest.mark.xdist_group(group).mark

    def get_closest_marker(self, name: str) -> object:
        return self.marks.get(name)


def test_the_slow_tests_are_handed_out_first_the_biggest_modules_foremost() -> None:
    from tests.conftest import pytest_collection_modifyitems_slow_first

    items = [
        _Item("fast_a"),
        _Item("one_long", slow=True, group="reliability/test_one.py"),
        _Item("fast_b"),
        _Item("demo_1", slow=True, group="example/test_demo.py"),
        _Item("browser", slow=True),
        _Item("demo_2", slow=True, group="example/test_demo.py"),
        _Item("fast_c"),
    ]
    pytest_collection_modifyitems_slow_first(items)  # type: ignore[arg-type]
    order = [item.nodeid for item in items]
    assert order == ["demo_1", "demo_2", "one_long", "browser", "fast_a", "fast_b", "fast_c"]
