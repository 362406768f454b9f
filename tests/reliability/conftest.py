"""Shared pieces of the reliability suite: the damage recorder and child-process helpers.

Every test of this suite counts the cases it ran and the damage it saw
(duplicate charges, lost rows, leaked secrets...) and hands them to
``reliability_record``. The row is printed, appended as one JSON line to the
file named by ``PAYCHARGE_RELIABILITY_LOG`` when that is set
(``scripts/reliability`` sets it and renders ``docs/reliability.md`` from it),
and then every damage count is asserted to be zero: a row with damage is
still written, so the table shows what went wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from django_paycharge.client.vocabulary import LISTED_ONLY_CHARGE_FIELDS
from tests.waiting import GUARD, tail

LOG_ENV = "PAYCHARGE_RELIABILITY_LOG"


def as_single(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A charge's payload without what only list items carry: a single read's and a list's
    payloads of one charge compare equal."""
    return {k: v for k, v in raw.items() if k not in LISTED_ONLY_CHARGE_FIELDS}


ROOT = Path(__file__).resolve().parents[2]

Recorder = Callable[..., None]


def write_record(
    name: str, fault: str, cases: int, damage: Mapping[str, int], *, note: str = ""
) -> dict[str, Any]:
    """Print one row and append it to ``$PAYCHARGE_RELIABILITY_LOG`` (when set)."""
    row = {
        "test": name,
        "fault": fault,
        "cases": int(cases),
        "damage": {k: int(v) for k, v in damage.items()},
        "note": note,
        "db": connection.vendor,
    }
    print(f"[reliability] {json.dumps(row, ensure_ascii=False)}")
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return row


@pytest.fixture
def reliability_record() -> Recorder:
    """``reliability_record(name, fault, cases, damage, note="")``: record a row, then assert.

    ``cases`` must be positive (a test that ran nothing proves nothing) and
    every value of ``damage`` must be zero.
    """

    def record(
        name: str, fault: str, cases: int, damage: Mapping[str, int], *, note: str = ""
    ) -> None:
        write_record(name, fault, cases, damage, note=note)
        assert cases > 0, f"{name}: no case ran"
        assert damage, f"{name}: no damage counter"
        assert all(v == 0 for v in damage.values()), f"{name}: damage {dict(damage)}"

    return record


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment of a child process that opens this test's database (see tests/settings.py)."""
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    env["PAYCHARGE_CHILD_DB_NAME"] = str(connection.settings_dict["NAME"])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # The parent's settings may be overridden by the test: the child gets them as JSON.
    env.pop(LOG_ENV, None)
    env.update(extra or {})
    return env


def run_child(
    script: str, args: list[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``tests/reliability/<script>`` with this interpreter; returns the finished process."""
    command = [sys.executable, str(Path(__file__).with_name(script)), *args]
    process = subprocess.Popen(
        command, env=dict(env), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = process.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"{script} {args} still ran after {GUARD:g} s (killed):\n{tail(out + err)}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)
