"""Every gate of scripts/checks fails on a defect planted in a copy of the project.

A gate that cannot fail is worse than none: it says "passed" about what it never saw
(mkdocs ran with ``--quiet`` for weeks, which hid the warnings strict mode aborts on).
Each test copies the project, plants one defect, runs the gate as scripts/test does, and
asserts it exits non-zero *naming the defect*, so the failure is the plant's and not the
copy's. Needs the tools of the dev group on the interpreter's PATH (scripts/test runs this
folder in .venv after the gates themselves; the nox legs, which test the wheel, skip it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])
COPIED = [
    "django_paycharge", "docs", "scripts", "tests", "example_project", "bench",
    "mkdocs.yml", "pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "noxfile.py",
    ".mypy_cache",
]  # fmt: skip
IGNORED = shutil.ignore_patterns("__pycache__", ".data", "*.sqlite3")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    copy.mkdir()
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=IGNORED)
        elif source.exists():
            shutil.copy2(source, copy / name)
    return copy


def gate(project: Path, name: str) -> subprocess.CompletedProcess[str]:
    tools = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": tools + os.pathsep + os.environ.get("PATH", "")}
    env.pop("PYTHONPATH", None)
    env["PAYCHARGE_VENV"] = str(Path(sys.executable).parent.parent)
    return subprocess.run(
        [str(project / "scripts" / "checks"), name],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def plant(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as module:
        module.write(text)


def failed_naming(result: subprocess.CompletedProcess[str], *words: str) -> bool:
    said = result.stdout + result.stderr
    return result.returncode not in (0, 3) and all(word in said for word in words)


def test_ruff_fails_on_an_unused_import(project: Path) -> None:
    plant(project / "django_paycharge" / "money.py", "\nimport ast  # planted\n")
    result = gate(project, "ruff")
    assert failed_naming(result, "F401", "money.py"), result.stdout + result.stderr


def test_ruff_fails_on_unformatted_code(project: Path) -> None:
    plant(project / "django_paycharge" / "money.py", "\nPLANTED = [1,2,3]\n")
    result = gate(project, "ruff")
    assert failed_naming(result, "money.py"), result.stdout + result.stderr
    assert "format" in (result.stdout + result.stderr).lower()


def test_mypy_fails_on_a_wrong_return_type(project: Path) -> None:
    plant(
        project / "django_paycharge" / "money.py",
        '\n\ndef _planted() -> int:\n    return "not an int"\n',
    )
    result = gate(project, "mypy")
    assert failed_naming(result, "money.py", "return-value"), result.stdout + result.stderr


def test_mypy_fails_on_a_test_that_passes_the_app_a_wrong_type(project: Path) -> None:
    """The tests are checked too: an unannotated test's body against the app's types."""
    plant(
        project / "tests" / "test_money.py",
        '\n\ndef test_planted():\n    to_major("1000", "JPY")\n',
    )
    result = gate(project, "mypy")
    assert failed_naming(result, "test_money.py", "arg-type"), result.stdout + result.stderr


def test_migrations_fail_on_a_field_without_its_migration(project: Path) -> None:
    plant(
        project / "django_paycharge" / "models" / "charges.py",
        '\n\nCharge.add_to_class("planted", models.IntegerField(default=0))\n',
    )
    result = gate(project, "migrations")
    assert failed_naming(result, "planted"), result.stdout + result.stderr


def test_security_fails_on_a_shell_command(project: Path) -> None:
    plant(
        project / "django_paycharge" / "money.py",
        "\n\ndef _planted(command: str) -> None:\n"
        "    import subprocess\n\n"
        "    subprocess.call(command, shell=True)\n",
    )
    result = gate(project, "security")
    assert failed_naming(result, "B602", "money.py"), result.stdout + result.stderr


def test_docs_fail_on_a_broken_link(project: Path) -> None:
    plant(project / "docs" / "index.md", "\nSee [the planted page](planted-page.md).\n")
    result = gate(project, "docs")
    assert failed_naming(result, "planted-page.md"), result.stdout + result.stderr


def test_docs_fail_on_a_broken_changelog_link(project: Path) -> None:
    """The changelog page shows CHANGELOG.md, whose links are the repository's own."""
    plant(project / "CHANGELOG.md", "\n- See [the planted page](docs/planted-page.md).\n")
    result = gate(project, "docs")
    assert failed_naming(result, "planted-page.md"), result.stdout + result.stderr
