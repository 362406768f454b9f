"""A module of the slow folders runs on one pytest-xdist worker, as tests/conftest.py asks.

Its module fixtures (the demo shop, a shop stack, a gateway server) start once only if
``--dist loadgroup`` keeps the module together. pytest 9.2 broke that without a word
(pytest-xdist issue 1386): every demo test's worker started its own demo. This runs two
tests of one such module on two workers, with the pinned tools, and reads where each ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.mark.slow
def test_the_tests_of_a_slow_folders_module_run_on_one_worker() -> None:
    selected = "table_shows_the_floor or reads_cpu_time_of_a_process_tree"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-n", "2", "--dist", "loadgroup", "-v", "-k", selected,
         str(TESTS / "bench" / "test_smoke.py")],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(r"^\[(gw\d+)\] .*PASSED (\S+)", done.stdout, re.MULTILINE)
    assert len(ran) == 2, done.stdout
    assert len({worker for worker, _ in ran}) == 1, ran
    assert all(test.endswith("@bench/test_smoke.py") for _, test in ran), ran
