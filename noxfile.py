"""The version matrix, run against the built wheel: ``nox`` (or ``scripts/test``, which calls it).

Sessions:
- ``build``: builds the wheel and sdist into dist/ (``uv build``), ``twine check --strict``,
  and checks what the wheel carries (every non-Python file, LICENSE) and says (metadata).
- ``sdist``: the sdist on its own, on the middle Django (6.0, Python 3.12): unpacked,
  installed with its own test groups, its whole suite collected, and one test of each
  module run from it (``PAYCHARGE_SMOKE``, tests/conftest.py): a smoke run of 6.0.
- ``tests``: the suite against the installed wheel (never the checkout), in parallel
  (pytest-xdist). Django 5.2 LTS on Python 3.11 (SQLite) and 6.1 on 3.13 (PostgreSQL, a
  throwaway cluster from scripts/pg.sh, with coverage) run every test, the slow ones
  included (but on PostgreSQL not the slow ones marked ``own_database``, which never
  touch it, or ``db_independent``, whose verdict does not depend on it: tests/conftest.py
  and pyproject.toml's markers say which). The queue tests are left to:
- ``queues``: the background-processing tests (tests/queues) on PostgreSQL with real
  workers and a real Redis (scripts/redis.sh, started by scripts/test; or their own):
  django-tasks-db, RQ (django-tasks-rq) and Celery on Django 5.2 (Celery through
  django_paycharge.celery) and on Django 6.1 (Celery through django-tasks-celery).

Every session installs with uv, pinned by constraints.txt (scripts/lock writes it from
pyproject.toml's dependency groups): the versions CI tests with change only in a commit.
``PAYCHARGE_TEST_WORKERS`` sets pytest-xdist's worker count (default 3: many tests wait on
processes and sockets, so more workers than the two cores still pay, up to a point).
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import nox

nox.options.sessions = ["build", "sdist", "tests", "queues"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "uv"

ROOT = Path(__file__).parent
CONSTRAINTS = str(ROOT / "constraints.txt")
# (Python, Django, database, which tests): "all" on the oldest Django and on PostgreSQL,
# so every test runs at least once on each database and on the oldest Django/Python.
MATRIX = [
    ("3.11", "5.2", "sqlite", "all"),
    ("3.13", "6.1", "postgres", "all"),
]
QUEUE_MATRIX = [("3.11", "5.2"), ("3.13", "6.1")]
# Where coverage is measured: every test on the newest Python (cheap with sys.monitoring).
COVERAGE_LEG = ("3.13", "postgres", "all")
WHEEL_MUST_CONTAIN = [
    "django_paycharge/py.typed",
    "django_paycharge/migrations/0001_initial.py",
    "django_paycharge/templates/django_paycharge/payment.html",
    "django_paycharge/templates/django_paycharge/issuer_token/http_post.html",
    "django_paycharge/static/django_paycharge/",
    "django_paycharge/locale/ja/LC_MESSAGES/django.mo",
    "django_paycharge/celery.py",
]
# What the wheel's METADATA must say (the issue tracker's first checks of a package).
METADATA_MUST_CONTAIN = [
    "License-Expression: MIT",
    "License-File: LICENSE",
    "Project-URL: Documentation,",
    "Project-URL: Source,",
    "Classifier: Development Status :: 4 - Beta",
    "Classifier: Framework :: Django :: 5.2",
    "Classifier: Framework :: Django :: 6.0",
    "Classifier: Framework :: Django :: 6.1",
    "Requires-Dist: babel>=2.12",
    "Requires-Dist: djangorestframework>=3.15; extra == 'api'",
]


@nox.session(python=False)
def build(session: nox.Session) -> None:
    """Build the wheel and sdist; check them with twine and check what the wheel carries."""
    shutil.rmtree(ROOT / "dist", ignore_errors=True)
    session.run(
        "uv", "build", "--quiet", "--build-constraint", CONSTRAINTS, "--out-dir",
        str(ROOT / "dist"), str(ROOT), external=True,
    )  # fmt: skip
    session.run(
        sys.executable, "-m", "twine", "check", "--strict", *glob.glob(str(ROOT / "dist/*"))
    )
    wheel = _wheel()
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    missing = [m for m in WHEEL_MUST_CONTAIN if not any(n.startswith(m) for n in names)]
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        missing.append("LICENSE")
    if missing:
        session.error(f"{wheel} lacks {missing}")
    if any(n.startswith(("tests/", "example_project/", "bench/")) for n in names):
        session.error(f"{wheel} carries files that are not part of the app")
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    lines = metadata.splitlines()
    absent = [m for m in METADATA_MUST_CONTAIN if not any(line.startswith(m) for line in lines)]
    if absent:
        session.error(f"{wheel}'s METADATA lacks {absent}")
    from trove_classifiers import classifiers as known  # the list PyPI accepts

    unknown = [c for c in (line.removeprefix("Classifier: ") for line in lines
               if line.startswith("Classifier: ")) if c not in known]  # fmt: skip
    if unknown:
        session.error(f"PyPI would refuse the classifiers {unknown}")
    if any(
        line.startswith("Requires-Dist: djangorestframework") and "extra ==" not in line
        for line in lines
    ):
        session.error("DRF must be required by the api extra only")
    with tarfile.open(_sdist()) as sdist:
        members = {n.split("/", 1)[-1] for n in sdist.getnames()}
    for required in ("LICENSE", "pyproject.toml", "tests/conftest.py", "docs/openapi.yaml"):
        if required not in members:
            session.error(f"{_sdist()} lacks {required}")
    session.log(f"{Path(wheel).name}: {len(names)} files, all required ones present")


# The middle Django: constraints.txt pins 6.0 on Python 3.12.
@nox.session(python="3.12")
def sdist(session: nox.Session) -> None:
    """The sdist's own tests, run from the unpacked sdist (no checkout involved), on Django
    6.0: the whole suite is collected (every module imports, every fixture resolves), and
    the first fast test of each module runs."""
    workdir = Path(tempfile.mkdtemp(prefix="paycharge-sdist-"))
    with tarfile.open(_sdist()) as archive:
        archive.extractall(workdir, filter="data")
    (unpacked,) = workdir.iterdir()
    groups = [f"--group={unpacked}/pyproject.toml:{g}" for g in ("test", "queues")]
    session.install("-c", CONSTRAINTS, str(unpacked), *groups)
    env = {"PAYCHARGE_TEST_DB": "sqlite", "PAYCHARGE_HYPOTHESIS": "quick"}
    with session.chdir(unpacked):
        session.run("python", "-c", "import django; assert django.VERSION[:2] == (6, 0), "
                    "django.get_version(); print('django', django.get_version())")  # fmt: skip
        session.run("python", "-m", "pytest", "-p", "no:cacheprovider", "-q",
                    "--collect-only", env=env, silent=True)  # fmt: skip
        # One process: a worker of pytest-xdist collects and migrates for seconds of its own.
        session.run(
            "python", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "not slow",
            "-p", "no:randomly", env={**env, "PAYCHARGE_SMOKE": "1"},
        )  # fmt: skip
    shutil.rmtree(workdir, ignore_errors=True)


@nox.session
@nox.parametrize(
    ("python", "django", "db", "which"),
    MATRIX,
    ids=[f"{d}-py{p}-{b}" + ("" if w == "all" else "-fast") for p, d, b, w in MATRIX],
)
def tests(session: nox.Session, django: str, db: str, which: str) -> None:
    """The suite against the wheel, from a copy of tests/ outside the checkout."""
    _install_with_groups(session, django, "test")
    # tests/queues needs the queues group (celery, rq) even to be collected: it has its
    # own session below; tests/gates needs the checkout and its tools: scripts/test runs it.
    marks = "not queues" if which == "all" else "not queues and not slow"
    if db == "postgres":
        # A slow test with a database of its own (a new project's SQLite), or whose verdict
        # does not depend on the database (Chromium's pages, a packaging check), would
        # repeat the SQLite leg's run here.
        marks += " and not (slow and (own_database or db_independent))"
    args = ["-m", marks]
    args += ["--ignore=tests/queues", "--ignore=tests/gates", "-n", _workers()]
    # In the order tests/conftest.py gives (the slow tests first), not by group size.
    args += ["--dist=loadgroup", "--no-loadscope-reorder"]
    # Fuzz and property tests draw all their examples on the oldest Django and Python,
    # a quarter of them on the other legs, PostgreSQL's included (tests/hypothesis_profiles.py).
    oldest = (session.python, django, db, which) == MATRIX[0]
    env = {"PAYCHARGE_HYPOTHESIS": "thorough" if oldest else "quick"}
    if (session.python, db, which) == COVERAGE_LEG:
        # coverage runs pytest itself: started by pytest-cov, it began after our pytest
        # plugin had imported half the package, whose module-level lines then counted as
        # missed (82 % shown for 94 %). Its subprocess patch measures the xdist workers;
        # the floor is pyproject.toml's [tool.coverage.report] fail_under, checked by
        # `coverage report`. sys.monitoring (3.12+) keeps the measuring cheap.
        env["COVERAGE_CORE"] = "sysmon"
        _run_suite(session, db, [*args, *session.posargs], env, coverage=True)
        return
    _run_suite(session, db, [*args, *session.posargs], env)


@nox.session
@nox.parametrize(("python", "django"), QUEUE_MATRIX, ids=[f"{d}-py{p}" for p, d in QUEUE_MATRIX])
def queues(session: nox.Session, django: str) -> None:
    """The background-processing tests on every queue backend, with real workers and Redis."""
    extra = ["django-tasks-celery"] if django >= "6" else []
    _install_with_groups(session, django, "test", "queues", *extra)
    _run_suite(session, "postgres", ["tests/queues", "-p", "no:randomly", *session.posargs], {})


def _workers() -> str:
    """pytest-xdist workers a leg (``PAYCHARGE_TEST_WORKERS``, default 3). Seven lanes share
    two cores: more workers on the slow legs cost more CPU for the same tests (CONTRIBUTING.md)."""
    return os.environ.get("PAYCHARGE_TEST_WORKERS") or "3"


def _install_with_groups(session: nox.Session, django: str, *groups_and_packages: str) -> None:
    """The wheel, Django ``django``, and pyproject.toml's groups (names) or packages, pinned
    by constraints.txt."""
    args: list[str] = ["-c", CONSTRAINTS, _wheel(), f"django~={django}.0"]
    for item in groups_and_packages:
        is_group = item.isidentifier()
        args += [f"--group={ROOT / 'pyproject.toml'}:{item}"] if is_group else [item]
    session.install(*args)


def _run_suite(
    session: nox.Session,
    db: str,
    pytest_args: list[str],
    env: dict[str, str],
    *,
    coverage: bool = False,
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="paycharge-suite-"))
    # The suite and what it reads (the checked-in schema, the benchmarks it smoke-tests);
    # never the package itself, which must come from the wheel.
    for name in ("tests", "bench", "docs"):
        shutil.copytree(ROOT / name, workdir / name)
    shutil.copy(ROOT / "pyproject.toml", workdir / "pyproject.toml")
    rcfile = f"--rcfile={ROOT / 'pyproject.toml'}"
    runner = ["python", "-m", "coverage", "run", rcfile, "-m"] if coverage else ["python", "-m"]
    args = [*runner, "pytest", "-p", "no:cacheprovider", *pytest_args]
    env = {"PAYCHARGE_TEST_DB": db, "PAYCHARGE_REPO": str(ROOT), **env}
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
        if coverage:
            session.run("python", "-m", "coverage", "combine", "-q", rcfile, env=env)
            # The installed package only: tests that start a process from the checkout
            # (the example shop, an import check) measure the checkout's copy too.
            wheel = "--include=*/site-packages/django_paycharge/*"
            session.run("python", "-m", "coverage", "report", rcfile, wheel, env=env)
    shutil.rmtree(workdir, ignore_errors=True)


def _sdist() -> str:
    found = sorted(glob.glob(str(ROOT / "dist" / "django_paycharge-*.tar.gz")))
    if not found:
        raise RuntimeError("No sdist in dist/: run the build session first (nox -s build).")
    return found[-1]


def _wheel() -> str:
    wheels = sorted(glob.glob(str(ROOT / "dist" / "django_paycharge-*.whl")), key=os.path.getmtime)
    if not wheels:
        raise RuntimeError("No wheel in dist/: run the build session first (nox -s build).")
    return wheels[-1]
