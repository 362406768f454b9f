"""What the benchmarks share: the fake gateway process, databases, workers, tables.

Everything binds to 127.0.0.1. Workers are separate processes so each
contender's peak RSS (``ru_maxrss``) is its own.
"""

from __future__ import annotations

import io
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


class FakeServer:
    """``python -m django_paycharge.testing.server --port 0`` in a subprocess."""

    def __init__(self, *extra: str) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "-m", "django_paycharge.testing.server", "--port", "0", *extra],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "listening at" not in line:
            self.stop()
            raise RuntimeError(f"the fake gateway did not start: {line!r}")
        self.base_url = line.rsplit(" ", 1)[1].strip()
        self.session = requests.Session()
        self.session.trust_env = False

    def control(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """POST a ``/_fake/`` control and return its JSON answer."""
        answer = self.session.post(f"{self.base_url}/_fake/{path}", json=body or {}, timeout=120)
        answer.raise_for_status()
        return answer.json()

    def reseed(self, count: int, seed: int = 1) -> None:
        """Forget everything (the latency too), then seed ``count`` charges.

        The same ``seed`` after a reset gives the same ids and statuses, but
        creation times move with the clock: every charge's body differs, so a
        second sync after a reseed updates every row.
        """
        self.control("reset")
        self.control("seed", {"count": count, "seed": seed})

    def set_latency(self, seconds: float) -> None:
        """Every API request (list pages and reads) waits ``seconds`` first: a distant gateway."""
        self.control("latency", {"seconds": seconds})

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def fake_server(*extra: str) -> Iterator[FakeServer]:
    server = FakeServer(*extra)
    try:
        yield server
    finally:
        server.stop()


def have_postgres() -> bool:
    return bool(os.environ.get("PAYCHARGE_TEST_PG_HOST"))


def pg_connect(dbname: str = "postgres") -> Any:
    import psycopg

    return psycopg.connect(
        host=os.environ.get("PAYCHARGE_TEST_PG_HOST", "127.0.0.1"),
        port=os.environ.get("PAYCHARGE_TEST_PG_PORT", "5432"),
        user=os.environ.get("PAYCHARGE_TEST_PG_USER", "postgres"),
        password=os.environ.get("PAYCHARGE_TEST_PG_PASSWORD", ""),
        dbname=dbname,
        autocommit=True,
    )


class Databases:
    """Empty, migrated databases made fast from one migrated template per code tree."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._templates: set[tuple[str, str]] = set()

    def fresh(self, vendor: str, name: str, code: Path | None = None) -> str:
        """A new empty mirror migrated by ``code`` (by default this tree); its ``BENCH_DB_NAME``."""
        tag = "template" if code is None else f"template_{code.name}"
        made = (vendor, tag) in self._templates
        self._templates.add((vendor, tag))
        if vendor == "sqlite":
            template = self.workdir / f"{tag}.sqlite3"
            if not made:
                migrate("sqlite", str(template), code)
            path = self.workdir / f"{name}.sqlite3"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            shutil.copyfile(template, path)
            return str(path)
        pg_template = f"paycharge_bench_{tag}"
        with pg_connect() as conn:
            if not made:
                conn.execute(f'DROP DATABASE IF EXISTS "{pg_template}"')
                conn.execute(f'CREATE DATABASE "{pg_template}"')
                migrate("postgres", pg_template, code)
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
        return name

    def drop_all(self) -> None:
        if not have_postgres():
            return
        with pg_connect() as conn:
            rows = conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'paycharge_bench%%'"
            ).fetchall()
            for (name,) in rows:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def bench_env(vendor: str, db_name: str, code: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a worker; ``code``: a tree whose ``django_paycharge`` it runs instead
    (run the worker there: ``python -m`` puts its working directory first)."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="bench.settings",
        BENCH_DB=vendor,
        BENCH_DB_NAME=db_name,
        PYTHONPATH=os.pathsep.join([*([str(code)] if code else []), str(ROOT)]),
        **extra,
    )
    return env


def migrate(vendor: str, db_name: str, code: Path | None = None) -> None:
    subprocess.run(
        [PYTHON, "bench/manage.py", "migrate", "-v", "0"],
        cwd=ROOT,
        env=bench_env(vendor, db_name, code),
        check=True,
    )


def code_at(commit: str, into: Path) -> Path | None:
    """``django_paycharge`` at ``commit`` (``git archive``), or None outside a git checkout."""
    target = into / f"code_{commit[:12]}"
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "django_paycharge"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        return None
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target


def run_worker(
    module: str, args: Sequence[str], env: dict[str, str], timeout: float, cwd: Path = ROOT
) -> Any:
    """Run ``python -m module args`` in ``cwd`` (first on its path) and return the JSON of
    its last output line."""
    done = subprocess.run(
        [PYTHON, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def emit(result: dict[str, Any]) -> None:
    """A worker's answer: one JSON line, the last thing it prints."""
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(result), flush=True)


class QueryCounter:
    """Counts SQL statements run through Django's connection (``execute_wrapper``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any
    ) -> Any:
        self.count += 1
        return execute(sql, params, many, ctx)


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1))))
    return ordered[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (pastes into the README as it is)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    out = [f"### {title}", ""]
    out.append("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        out.append("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |")
    return "\n".join(out)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def machine() -> str:
    """One line of context printed under every table."""
    load = os.getloadavg()
    return (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load {load[0]:.1f} at start, {time.strftime('%Y-%m-%d %H:%M')}"
    )
