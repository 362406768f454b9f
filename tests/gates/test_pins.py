"""The tools are pinned in one place: constraints.txt, which scripts/lock writes."""

from __future__ import annotations

import itertools
import re
import tomllib

from .test_gates import REPO

PINS = {
    match["name"].lower(): match["version"]
    for match in re.finditer(
        r"^(?P<name>[A-Za-z0-9_.-]+)==(?P<version>[^ ;\n]+)",
        (REPO / "constraints.txt").read_text(encoding="utf-8"),
        re.MULTILINE,
    )
}


def _name(requirement: str) -> str:
    return re.split(r"[<>=~!;\[ ]", requirement, maxsplit=1)[0].lower()


def test_every_tool_and_test_dependency_is_pinned() -> None:
    groups = tomllib.loads((REPO / "pyproject.toml").read_text())["dependency-groups"]
    wanted = {_name(item) for group in groups.values() for item in group if isinstance(item, str)}
    assert wanted - set(PINS) == set()


def test_pre_commit_runs_the_pinned_tools_of_the_venv() -> None:
    config = (REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    entries = re.findall(r"entry: (.+)", config)
    assert {"ruff-check", "ruff-format", "migrations"} <= set(re.findall(r"id: (\S+)", config))
    assert entries and all(".venv/bin/" in entry for entry in entries)
    assert "pre-commit" in PINS and "ruff" in PINS


def test_the_coverage_floor_only_rises() -> None:
    """Each commit that changed ``fail_under`` raised it (the history of pyproject.toml)."""
    import subprocess

    log = subprocess.run(
        ["git", "log", "--reverse", "-p", "--format=commit %H", "--", "pyproject.toml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    floors = [
        (sign, int(value))
        for sign, value in re.findall(r"^([+-])fail_under = (\d+)$", log, re.MULTILINE)
    ]
    current = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["coverage"]
    assert floors and floors[-1] == ("+", current["report"]["fail_under"])
    lowered = [
        (old, new)
        for (s1, old), (s2, new) in itertools.pairwise(floors)
        if (s1, s2) == ("-", "+") and new < old
    ]
    assert lowered == []
