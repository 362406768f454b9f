"""Webhook benchmark: the receiver under gunicorn (2 workers) on PostgreSQL.

    bench/run webhooks [--senders 1,8,32] [--deliveries 200,800,1600] [--duplicates 0.1]
                       [--worker-class sync,gthread] [--nice 0,10,idle]

gunicorn serves ``bench.urls`` (``payments/webhook/``) with background
processing on: the view stores each delivery and enqueues it in one
transaction; one ``manage.py db_worker`` (django-tasks-db) processes them,
each by re-reading the charge from the fake gateway. Senders are threads,
each with its own ``http.client`` connection (kept alive when the server
allows it, reopened when it closes it): they stand in for the gateway, and a
cheap client leaves the two CPUs to the shop. 1, 8 and 32 of them send a
bounded number of deliveries back to back, a share of which repeat a
delivery already sent (the gateway retries). Latency is measured by the
sender, per request, from sending to the last byte of the answer.

Each variant runs on a fresh database with a fresh gunicorn and worker:
gunicorn's ``sync`` workers (a connection per request) or ``gthread`` ones
(one thread each: keep-alive, no more concurrency), and the background
worker at the web workers' priority or below it (``nice 10``: it yields most
of the CPUs to the answers during a burst and catches up after; ``idle``:
Linux's ``SCHED_IDLE`` policy, it runs only on a CPU nothing else wants).
All are choices a production shop can make; every combination is printed.
The queue is drained before each sender level, so every level starts from an
idle worker, and the worker keeps processing while the senders send.

At the end of each variant (after the worker drained the queue, bounded
wait) every unique delivery must be stored once and processed once: lost and
double-processed deliveries are counted, not assumed. CPU time per delivery
of every process involved (/proc, Linux) is printed too.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench._common import (
    PYTHON,
    ROOT,
    Databases,
    FakeServer,
    bench_env,
    fake_server,
    have_postgres,
    machine,
    median,
    percentile,
    pg_connect,
    table,
)
from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID
from django_paycharge.testing.server import free_port

TOKEN = "bench-webhook-token-" + uuid.uuid4().hex
PATH = "/payments/webhook/"
# Errors that mean the server closed a kept-alive connection before answering.
_CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def wait_http(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", PATH)  # 405: the view is up
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.2)
        finally:
            conn.close()
    raise SystemExit(f"gunicorn on port {port} did not come up in {timeout:.0f} s")


def charges(fake: FakeServer, count: int) -> list[dict[str, Any]]:
    auth = {"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"}
    found: list[dict[str, Any]] = []
    cursor = None
    while len(found) < count:
        params = {"limit": "100"} | ({"cursor": cursor} if cursor else {})
        page = fake.session.get(
            f"{fake.base_url}/stores/{TEST_STORE_ID}/charges", params=params, headers=auth
        ).json()
        found += page["items"]
        if not page["has_more"]:
            break
        cursor = page["items"][-1]["id"]
    return found[:count]


def plan(
    items: list[dict[str, Any]], count: int, duplicates: float, rng: random.Random
) -> list[dict[str, Any]]:
    """``count`` bodies: unique deliveries, and repeats of earlier ones mixed in."""
    bodies: list[dict[str, Any]] = []
    for n in range(count):
        if bodies and rng.random() < duplicates:
            bodies.append(rng.choice(bodies))
            continue
        charge = items[n % len(items)]
        bodies.append(
            {
                "id": str(uuid.uuid4()),
                "event": "charge_finished",
                "created_on": charge["created_on"],
                "data": charge,
            }
        )
    return bodies


def send_all(
    port: int, bodies: list[dict[str, Any]], senders: int, path: str = PATH
) -> dict[str, Any]:
    """Send every body once, from ``senders`` threads to ``path``; latency per request in ms."""
    local = threading.local()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    payloads = [json.dumps(body).encode() for body in bodies]
    resent: list[bytes] = []  # appended from the sender threads

    def post(payload: bytes) -> http.client.HTTPResponse:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", path, payload, headers)
        return conn.getresponse()

    def send(payload: bytes) -> tuple[float, int, str, bool]:
        started = time.perf_counter()
        try:
            answer = post(payload)
        except _CLOSED:
            # Closed before any answer (an idle kept-alive connection): open a
            # new one and send again; the clock keeps running. The receiver
            # answers a repeat as a duplicate, as it would the gateway's retry.
            local.conn.close()
            local.conn = None
            resent.append(payload)
            answer = post(payload)
        data = answer.read()
        elapsed = (time.perf_counter() - started) * 1000
        if answer.will_close:  # gunicorn's sync workers close every connection
            local.conn.close()
            local.conn = None
        is_json = answer.status == 200 and data[:1] == b"{"  # the minimal view answers "ok"
        duplicate = is_json and json.loads(data).get("duplicate") is True
        queries = answer.getheader("X-Bench-Queries", "0")
        return elapsed, answer.status, queries, duplicate

    cpu = time.process_time()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=senders) as pool:
        results = list(pool.map(send, payloads))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "sender_cpu": time.process_time() - cpu,
        "latencies": [r[0] for r in results],
        "errors": sum(r[1] != 200 for r in results),
        "queries": [int(r[2]) for r in results],
        "duplicates_answered": sum(r[3] for r in results),
        "resent": len(resent),
    }


# CPU time of the processes involved, from /proc (Linux; zeros elsewhere).
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float, float]:
    """``(ppid, own cpu s, cpu s of reaped children)`` of ``pid``; zeros when gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0, 0.0, 0.0
    own = (int(fields[11]) + int(fields[12])) / _TICK
    reaped = (int(fields[13]) + int(fields[14])) / _TICK
    return int(fields[1]), own, reaped


def _tree_cpu(root: int) -> float:
    """CPU seconds of ``root``, its live children and the children it reaped."""
    if not Path("/proc").is_dir():
        return 0.0
    if root <= 1:  # not found: unknown, never the whole machine
        return float("nan")
    _, own, reaped = _stat(root)
    total = own + reaped
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            ppid, child, _ = _stat(int(entry.name))
            if ppid == root:
                total += child
    return total


def _postmaster(db: str) -> int:
    """The PostgreSQL server process: the parent of a backend (read while it lives)."""
    with pg_connect(db) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        return _stat(int(backend))[0]


class CpuMeter:
    """CPU seconds used by each process group of the benchmark since the last reading."""

    def __init__(self, groups: dict[str, int]) -> None:
        self.groups = groups
        self.last = self._read()

    def _read(self) -> dict[str, float]:
        return {name: _tree_cpu(pid) for name, pid in self.groups.items()}

    def lap(self) -> dict[str, float]:
        now = self._read()
        used = {name: now[name] - self.last[name] for name in now}
        self.last = now
        return used


def main() -> None:
    parser = argparse.ArgumentParser(description="Webhook benchmark (see bench/README.md).")
    parser.add_argument("--deliveries", default="200,800,1600", help="per sender level 1,8,32")
    parser.add_argument("--senders", default="1,8,32")
    parser.add_argument("--duplicates", type=float, default=0.1, help="share of repeats")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--worker-class", default="sync,gthread", help="gunicorn worker classes to compare"
    )
    parser.add_argument(
        "--nice",
        default="0,10,idle",
        help="priorities of the background worker to compare: a niceness (0: the same "
        "as gunicorn's), or idle (SCHED_IDLE: only CPU time nothing else wants)",
    )
    parser.add_argument("--drain-timeout", type=float, default=300)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the receipt cost")
    parser.add_argument("--receipt-deliveries", type=int, default=1000, help="per contender")
    parser.add_argument("--receipt-senders", type=int, default=1)
    parser.add_argument("--receipt-only", action="store_true", help="only the receipt cost")
    parser.add_argument("--skip-receipt", action="store_true", help="only the latency variants")
    args = parser.parse_args()
    if not have_postgres():
        raise SystemExit("PostgreSQL needed: run it through bench/run (it starts a cluster).")
    levels = [int(v) for v in args.senders.split(",")]
    counts = [int(v) for v in args.deliveries.split(",")]
    variants = [
        (kind, nice) for kind in args.worker_class.split(",") for nice in args.nice.split(",")
    ]
    for _, nice in variants:
        if nice != "idle" and not nice.lstrip("-").isdigit():
            raise SystemExit(f"--nice: {nice!r} is neither a niceness nor idle")
    context = machine()
    rng = random.Random(10)
    rows: list[list[Any]] = []
    cpu_rows: list[list[Any]] = []
    once_rows: list[list[Any]] = []
    sent_duplicates = 0
    resent = 0
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        fake.control("seed", {"count": 1000, "seed": 1})
        items = charges(fake, 1000)
        dbs = Databases(Path(tmp))
        try:
            if not args.skip_receipt:
                from bench import webhook_receipt  # it imports this module's helpers

                _print_receipt(webhook_receipt.run(args, fake, dbs, items), args, context)
            if args.receipt_only:
                return
            for n, (kind, nice) in enumerate(variants):
                db = dbs.fresh("postgres", f"paycharge_bench_webhooks_{n}")
                label = f"{kind}, worker " + ("idle" if nice == "idle" else f"nice {nice}")
                result = _variant(args, fake, db, kind, nice, levels, counts, items, rng)
                sent_duplicates += result["repeats"]
                resent += result["resent"]
                for row in result["rows"]:
                    rows.append([label, *row])
                for row in result["cpu"]:
                    cpu_rows.append([label, *row])
                once_rows.append([label, *result["once"]])
        finally:
            dbs.drop_all()
    print(
        table(
            f"Webhook receiver: gunicorn {args.workers} workers, PostgreSQL, background "
            "processing on (one django-tasks-db worker, at the niceness shown)",
            ["gunicorn workers, background worker", "senders", "deliveries",
             "of which repeats", "deliveries/s", "p50 ms", "p95 ms", "p99 ms",
             "queries/delivery", "non-200"],
            rows,
        )
    )  # fmt: skip
    print()
    print(
        table(
            "CPU ms per delivery while sending (all processes on the 2 CPUs; the worker "
            "catches up after)",
            ["gunicorn workers, background worker", "senders", "senders (client)",
             "gunicorn", "background worker", "fake gateway", "PostgreSQL", "total",
             "processed while sending"],
            cpu_rows,
        )
    )  # fmt: skip
    print()
    print(
        table(
            "Exactly once, counted after the worker drained the queue",
            ["gunicorn workers, background worker", "unique sent", "stored", "processed",
             "lost", "processed twice", "drained in s", "processed/s while draining"],
            once_rows,
        )
    )  # fmt: skip
    print(
        f"\n{context}; repeats sent: {sent_duplicates}; sent again after the server closed "
        f"a kept-alive connection: {resent}; gthread runs 1 thread a worker (keep-alive, "
        "no more concurrency); the queue is drained before each sender level"
    )


def _print_receipt(result: dict[str, Any], args: argparse.Namespace, context: str) -> None:
    from bench import webhook_receipt

    print(
        table(
            f"Receipt cost: CPU ms per delivery of gunicorn and of PostgreSQL, ours against "
            f"the floor (3 columns) and a view writing our table ({args.rounds} rounds of "
            f"{args.receipt_deliveries} deliveries each, turns rotating; django-tasks-db)",
            ["round", "first", *webhook_receipt.COLUMNS],
            result["rows"],
        )
    )  # fmt: skip
    print()
    print(
        table(
            f"Receipt cost over the rounds (target: ours / floor <= {webhook_receipt.TARGET})",
            ["", "median", "range"],
            webhook_receipt.summary(result["rows"]),
        )
    )
    print()
    once = result["once"]
    print(
        table(
            "Receipt cost: exactly once, counted after the worker drained the queue",
            [*once, "non-200"],
            [[*once.values(), result["errors"]]],
        )
    )
    print(f"\n{context}; gunicorn {args.workers} sync workers, {args.receipt_senders} sender(s)\n")


def _variant(
    args: argparse.Namespace,
    fake: FakeServer,
    db: str,
    kind: str,
    nice: str,
    levels: list[int],
    counts: list[int],
    items: list[dict[str, Any]],
    rng: random.Random,
) -> dict[str, Any]:
    env = bench_env(
        "postgres",
        db,
        BENCH_GATEWAY_URL=fake.base_url,
        BENCH_TASKS="1",
        BENCH_WEBHOOK_TOKEN=TOKEN,
    )
    port = free_port()
    gunicorn = [PYTHON, "-m", "gunicorn", "bench.wsgi:application", "-w", str(args.workers),
                "-k", kind, "-b", f"127.0.0.1:{port}", "--log-level", "warning"]  # fmt: skip
    worker = [PYTHON, "bench/manage.py", "db_worker", "--interval", "0.05", "--no-startup-delay"]
    procs = [
        subprocess.Popen(gunicorn, cwd=ROOT, env=env),
        subprocess.Popen(
            worker, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, preexec_fn=_priority(nice)
        ),
    ]
    rows: list[list[Any]] = []
    cpu_rows: list[list[Any]] = []
    unique: set[str] = set()
    repeats = 0
    resent = 0
    try:
        wait_http(port, 30)
        meter = CpuMeter(
            {
                "gunicorn": procs[0].pid,
                "worker": procs[1].pid,
                "fake": fake.process.pid,
                "postgres": _postmaster(db),
            }
        )
        # Warm up both web workers (imports, database connections) off the
        # clock; these deliveries are counted in the exactly-once check too.
        warm_up = plan(items, 20, 0.0, rng)
        unique.update(b["id"] for b in warm_up)
        send_all(port, warm_up, 2)
        for senders, count in zip(levels, counts, strict=True):
            _drain(db, len(unique), args.drain_timeout)
            bodies = plan(items, count, args.duplicates, rng)
            ids = [b["id"] for b in bodies]
            repeats += len(ids) - len(set(ids))
            unique.update(ids)
            meter.lap()
            before = _counts(db)["done"]
            result = send_all(port, bodies, senders)
            used = meter.lap()
            resent += result["resent"]
            processed = _counts(db)["done"] - before
            lat = result["latencies"]
            rows.append(
                [
                    senders,
                    count,
                    len(ids) - len(set(ids)),
                    count / result["seconds"],
                    median(lat),
                    percentile(lat, 95),
                    percentile(lat, 99),
                    median([float(q) for q in result["queries"]]),
                    result["errors"],
                ]
            )
            per = 1000 / count
            client = result["sender_cpu"] * per
            parts = [used[k] * per for k in ("gunicorn", "worker", "fake", "postgres")]
            cpu_rows.append([senders, client, *parts, client + sum(parts), processed])
        pending = len(unique) - _counts(db)["done"]
        drained, at_end = _drain(db, len(unique), args.drain_timeout)
    finally:
        stop(procs)
    once = [
        len(unique),
        at_end["stored"],
        at_end["processed"],
        len(unique) - at_end["stored"],
        at_end["twice"],
        drained,
        pending / drained if pending > 0 and drained > 0 else float("nan"),
    ]
    return {"rows": rows, "cpu": cpu_rows, "once": once, "repeats": repeats, "resent": resent}


def stop(procs: list[subprocess.Popen[Any]]) -> None:
    """Terminate the benchmark's processes, and kill those that do not stop."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _priority(nice: str) -> Any:
    """What the background worker runs before it starts: its niceness, or SCHED_IDLE."""
    if nice == "idle":
        return lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    return lambda: os.nice(int(nice))


def _counts(db: str) -> dict[str, int]:
    with pg_connect(db) as conn:
        stored, processed, done, twice = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE status = 'processed'), "
            "count(*) FILTER (WHERE status IN ('processed', 'failed', 'ignored')), "
            "count(*) FILTER (WHERE attempts > 1) FROM django_paycharge_webhookdelivery"
        ).fetchone()
    return {"stored": stored, "processed": processed, "done": done, "twice": twice}


def _drain(db: str, expected: int, timeout: float) -> tuple[float, dict[str, int]]:
    """Wait until ``expected`` deliveries are done (or ``timeout``); their counts."""
    started = time.monotonic()
    while True:
        counts = _counts(db)
        if counts["done"] >= expected or time.monotonic() - started > timeout:
            return time.monotonic() - started, counts
        time.sleep(0.2)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    main()
