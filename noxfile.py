"""The version matrix, run against the built wheel: ``nox`` (or ``scripts/test``, which calls it).

Sessions:
- ``build``: builds the wheel and sdist into dist/ and checks what the wheel carries.
- ``tests``: the whole suite against the installed wheel (never the checkout):
  Django 5.2 LTS on Python 3.11, 6.0 on 3.12, 6.1 on 3.13, on SQLite; 6.1 on
  3.13 also on PostgreSQL (a throwaway cluster from scripts/pg.sh).
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import nox

nox.options.sessions = ["build", "tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
MATRIX = [
    ("3.11", "5.2", "sqlite"),
    ("3.12", "6.0", "sqlite"),
    ("3.13", "6.1", "sqlite"),
    ("3.13", "6.1", "postgres"),
]
WHEEL_MUST_CONTAIN = [
    "django_paycharge/py.typed",
    "django_paycharge/migrations/0001_initial.py",
    "django_paycharge/templates/django_paycharge/payment.html",
    "django_paycharge/templates/django_paycharge/issuer_token/http_post.html",
    "django_paycharge/static/django_paycharge/",
    "django_paycharge/locale/ja/LC_MESSAGES/django.mo",
]


@nox.session(python=False)
def build(session: nox.Session) -> None:
    """Build the wheel and sdist, and check the wheel carries every non-Python file."""
    shutil.rmtree(ROOT / "dist", ignore_errors=True)
    session.run(sys.executable, "-m", "build", "--outdir", "dist", str(ROOT), silent=True)
    wheel = _wheel()
    names = zipfile.ZipFile(wheel).namelist()
    missing = [m for m in WHEEL_MUST_CONTAIN if not any(n.startswith(m) for n in names)]
    if missing:
        session.error(f"{wheel} lacks {missing}")
    if any(n.startswith(("tests/", "example_project/", "bench/")) for n in names):
        session.error(f"{wheel} carries files that are not part of the app")
    session.log(f"{Path(wheel).name}: {len(names)} files, all required ones present")


@nox.session
@nox.parametrize(("python", "django", "db"), MATRIX, ids=[f"{d}-py{p}-{b}" for p, d, b in MATRIX])
def tests(session: nox.Session, django: str, db: str) -> None:
    """The suite against the wheel, from a copy of tests/ outside the checkout."""
    wheel = _wheel()
    session.install(f"{wheel}[test]", f"django~={django}.0")
    workdir = Path(tempfile.mkdtemp(prefix="paycharge-suite-"))
    # The suite and what it reads (the checked-in schema, the benchmarks it smoke-tests);
    # never the package itself, which must come from the wheel.
    for name in ("tests", "bench", "docs"):
        shutil.copytree(ROOT / name, workdir / name)
    shutil.copy(ROOT / "pyproject.toml", workdir / "pyproject.toml")
    args = ["python", "-m", "pytest", "-p", "no:cacheprovider", *session.posargs]
    env = {"PAYCHARGE_TEST_DB": db, "PAYCHARGE_REPO": str(ROOT)}
    with session.chdir(workdir):
        session.run(
            "python",
            "-c",
            "import django, django_paycharge, sys; "
            "assert 'site-packages' in django_paycharge.__file__, django_paycharge.__file__; "
            "print('django', django.get_version(), 'on', sys.version.split()[0])",
        )
        if db == "postgres":
            command = shlex.join(args)
            script = f"source {ROOT}/scripts/pg.sh && pg_start && trap pg_stop EXIT && {command}"
            session.run("bash", "-c", script, env=env, external=True)
        else:
            session.run(*args, env=env)
    shutil.rmtree(workdir, ignore_errors=True)


def _wheel() -> str:
    wheels = sorted(glob.glob(str(ROOT / "dist" / "django_paycharge-*.whl")), key=os.path.getmtime)
    if not wheels:
        raise RuntimeError("No wheel in dist/: run the build session first (nox -s build).")
    return wheels[-1]
