"""Receipt cost: server CPU per delivery of our receiver against the floor a shop writes.

    bench/run webhooks --receipt-only [--rounds 5] [--receipt-deliveries 1000]

One gunicorn (``sync`` workers, as shipped) serves three receivers
(``bench/minimal_webhook.py``):

- ``payments/webhook/``: ours, with background processing through
  django-tasks-db, as in production;
- ``floor-webhook/``, **the floor**: check the header in constant time, insert
  one row into a 3-column table of the shop's own (``bench/floor``), 200;
- ``full-table-webhook/``: the same, into our 16-column delivery table. Ours
  against it is our code's cost alone, it against the floor our table's.

In each round each receives the same number of unique deliveries from one
sender, one after the other; who goes first rotates from round to round. What
is measured is CPU time (/proc, Linux), not wall time: the 2-core machine is
shared, and CPU time is what a delivery costs whatever else runs. Two parts,
and their sum: the gunicorn processes, and the PostgreSQL server processes
that serve them (found in ``pg_stat_activity`` by the web processes'
``application_name``; the background worker's are not counted: its processing
is not the receipt). The target is ours / floor, both parts, at most
:data:`TARGET`.

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
FLOOR = "/floor-webhook/"
FULL = "/full-table-webhook/"
#: The receivers in the order of the first round (later rounds rotate it), and their names.
CONTENDERS = {OURS: "ours", FLOOR: "floor", FULL: "full table"}
TARGET = 1.2
#: The ``application_name`` of the web processes' database connections.
WEB = "bench-web"


def run(
    args: argparse.Namespace, fake: FakeServer, dbs: Databases, items: list[dict[str, Any]]
) -> dict[str, Any]:
    """Rounds taking turns; returns the rows per round and the exactly-once counts."""
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
    paths = list(CONTENDERS)
    try:
        wait_http(port, 30)
        meter = CpuMeter({"gunicorn": procs[0].pid})
        backends = BackendCpu(db, WEB)
        for path in paths:  # imports, connections, caches: off the clock
            warm = plan(items, 40, 0.0, rng)
            sent_ours.update(b["id"] for b in warm if path == OURS)
            send_all(port, warm, 2, path)
        for n in range(args.rounds):
            web: dict[str, float] = {}
            pg: dict[str, float] = {}
            order = paths[n % len(paths) :] + paths[: n % len(paths)]
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
            both = {path: web[path] + pg[path] for path in paths}
            rows.append(
                [n + 1, CONTENDERS[order[0]],
                 *(f"{part[path]:.2f}" for path in paths for part in (web, pg, both)),
                 f"{both[OURS] / both[FLOOR]:.2f}", f"{web[OURS] / web[FLOOR]:.2f}",
                 f"{pg[OURS] / pg[FLOOR]:.2f}", f"{both[OURS] / both[FULL]:.2f}",
                 f"{both[FULL] / both[FLOOR]:.2f}"]
            )  # fmt: skip
        once = _exactly_once(db, sent_ours, args.drain_timeout)
    finally:
        stop(procs)
    return {"rows": rows, "once": once, "errors": errors}


#: The columns of a round's row after its number and who went first.
COLUMNS = [
    *(f"{name}: {part}" for name in CONTENDERS.values()
      for part in ("gunicorn", "PostgreSQL", "both")),
    "ours / floor, both", "ours / floor, gunicorn", "ours / floor, PostgreSQL",
    "ours / full table, both", "full table / floor, both",
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
