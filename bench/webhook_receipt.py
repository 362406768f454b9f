"""Receipt cost: server CPU per delivery of our receiver against a minimal view.

    bench/run webhooks --receipt-only [--rounds 5] [--receipt-deliveries 1000]

One gunicorn (``sync`` workers, as shipped) serves both ``payments/webhook/``
(ours, with background processing through django-tasks-db, as in production)
and ``minimal-webhook/`` (``bench/minimal_webhook.py``: check the header,
insert one row). In each round both receive the same number of unique
deliveries from one sender, one after the other; which goes first alternates
from round to round. What is measured is CPU time (/proc, Linux), not wall
time: the 2-core machine is shared, and CPU time is what a delivery costs
whatever else runs. Two parts, and their sum: the gunicorn processes, and the
PostgreSQL server processes that serve them (found in ``pg_stat_activity`` by
the web processes' ``application_name``; the background worker's are not
counted: its processing is not the receipt).

A ``db_worker`` (at ``nice 10``) processes our deliveries meanwhile; at the end
it drains the queue, and every delivery sent to ours must be stored once and
processed once: lost and double-processed deliveries are counted.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import time
from typing import Any

from bench._common import PYTHON, ROOT, Databases, FakeServer, bench_env, median, pg_connect
from bench.webhooks import (
    TOKEN,
    CpuMeter,
    _priority,
    _stat,
    free_port,
    plan,
    send_all,
    stop,
    wait_http,
)

OURS = "/payments/webhook/"
MINIMAL = "/minimal-webhook/"
TARGET = 1.2
#: The ``application_name`` of the web processes' database connections.
WEB = "bench-web"


def run(
    args: argparse.Namespace, fake: FakeServer, dbs: Databases, items: list[dict[str, Any]]
) -> dict[str, Any]:
    """Alternating rounds; returns the rows per round and the exactly-once counts."""
    db = dbs.fresh("postgres", "paycharge_bench_receipt")
    env = bench_env(
        "postgres", db, BENCH_GATEWAY_URL=fake.base_url, BENCH_TASKS="1", BENCH_WEBHOOK_TOKEN=TOKEN
    )
    web_env = {**env, "BENCH_PG_APPLICATION": WEB}
    port = free_port()
    gunicorn = [PYTHON, "-m", "gunicorn", "bench.wsgi:application", "-w", str(args.workers),
                "-k", "sync", "-b", f"127.0.0.1:{port}", "--log-level", "warning"]  # fmt: skip
    worker = [PYTHON, "bench/manage.py", "db_worker", "--interval", "0.05", "--no-startup-delay"]
    procs = [
        subprocess.Popen(gunicorn, cwd=ROOT, env=web_env),
        subprocess.Popen(
            worker, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, preexec_fn=_priority("10")
        ),
    ]
    rng = random.Random(21)
    rows: list[list[Any]] = []
    sent_ours: set[str] = set()
    errors = 0
    try:
        wait_http(port, 30)
        meter = CpuMeter({"gunicorn": procs[0].pid})
        backends = BackendCpu(db, WEB)
        for path in (OURS, MINIMAL):  # imports, connections, caches: off the clock
            warm = plan(items, 40, 0.0, rng)
            sent_ours.update(b["id"] for b in warm if path == OURS)
            send_all(port, warm, 2, path)
        for n in range(args.rounds):
            web: dict[str, float] = {}
            pg: dict[str, float] = {}
            order = (OURS, MINIMAL) if n % 2 == 0 else (MINIMAL, OURS)
            for path in order:
                bodies = plan(items, args.receipt_deliveries, 0.0, rng)
                if path == OURS:
                    sent_ours.update(b["id"] for b in bodies)
                meter.lap()
                backends.lap()
                result = send_all(port, bodies, args.receipt_senders, path)
                web[path] = meter.lap()["gunicorn"] * 1000 / len(bodies)
                pg[path] = backends.lap() * 1000 / len(bodies)
                errors += result["errors"]
            total = {path: web[path] + pg[path] for path in order}
            rows.append(
                [n + 1, "ours" if order[0] == OURS else "minimal",
                 *(f"{part[OURS]:.2f}" for part in (web, pg, total)),
                 *(f"{part[MINIMAL]:.2f}" for part in (web, pg, total)),
                 f"{web[OURS] / web[MINIMAL]:.2f}", f"{total[OURS] / total[MINIMAL]:.2f}"]
            )  # fmt: skip
        once = _exactly_once(db, sent_ours, args.drain_timeout)
    finally:
        stop(procs)
    return {"rows": rows, "once": once, "errors": errors}


#: The columns of a round's row after its number and who went first.
COLUMNS = [
    "ours: gunicorn", "ours: PostgreSQL", "ours: both",
    "minimal: gunicorn", "minimal: PostgreSQL", "minimal: both",
    "ours / minimal, gunicorn", "ours / minimal, both",
]  # fmt: skip


def summary(rows: list[list[Any]]) -> list[list[Any]]:
    """Median and range of each measured column over the rounds."""
    out = []
    for column, label in enumerate(COLUMNS, start=2):
        values = [float(r[column]) for r in rows]
        out.append([label, f"{median(values):.2f}", f"{min(values):.2f} to {max(values):.2f}"])
    return out


class BackendCpu:
    """CPU seconds of the PostgreSQL server processes of one ``application_name``."""

    def __init__(self, db: str, application: str) -> None:
        self.db = db
        self.application = application
        self.last = self._read()

    def _read(self) -> dict[int, float]:
        with pg_connect(self.db) as conn:
            pids = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", [self.application]
            ).fetchall()
        return {pid: _stat(pid)[1] for (pid,) in pids}

    def lap(self) -> float:
        """Seconds used since the last lap (a process new since then: all of its own)."""
        now = self._read()
        used = sum(cpu - self.last.get(pid, 0.0) for pid, cpu in now.items())
        self.last = now
        return used


def _exactly_once(db: str, sent: set[str], timeout: float) -> dict[str, Any]:
    """Wait for the worker to process every delivery sent to ours; count what went wrong."""
    query = (
        "SELECT count(*), count(*) FILTER (WHERE status IN ('processed', 'failed', 'ignored')), "
        "count(*) FILTER (WHERE attempts > 1) FROM django_paycharge_webhookdelivery "
        "WHERE dedupe_key LIKE 'id:%%'"
    )
    started = time.monotonic()
    while True:
        with pg_connect(db) as conn:
            stored, done, twice = conn.execute(query).fetchone()
        if done >= len(sent) or time.monotonic() - started > timeout:
            break
        time.sleep(0.2)
    return {
        "sent": len(sent),
        "stored": stored,
        "processed": done,
        "lost": len(sent) - stored,
        "not processed": stored - done,
        "processed twice": twice,
        "drained in s": time.monotonic() - started,
    }
