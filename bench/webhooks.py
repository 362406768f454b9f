"""Webhook benchmark: the receiver under gunicorn (2 workers) on PostgreSQL.

    bench/run webhooks [--deliveries 200,800,1600] [--duplicates 0.1]

gunicorn serves ``bench.urls`` (``payments/webhook/``) with background
processing on: the view stores each delivery and enqueues it; one
``manage.py db_worker`` (django-tasks-db) processes them, each by re-reading
the charge from the fake gateway. Senders are threads, each with its own
keep-alive connection; 1, 8 and 32 of them send a bounded number of
deliveries, a share of which repeat a delivery already sent (the gateway
retries). Latency is measured by the sender, per request.

At the end (after the worker drained the queue, bounded wait) every unique
delivery must be stored once and processed once: lost and double-processed
deliveries are counted, not assumed.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

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

TOKEN = "bench-webhook-token-" + uuid.uuid4().hex
PATH = "/payments/webhook/"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=5)  # 405: the view is up
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up in {timeout:.0f} s")


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


def send_all(url: str, bodies: list[dict[str, Any]], senders: int) -> dict[str, Any]:
    """Send every body once, from ``senders`` threads; latency per request in ms."""
    local = threading.local()
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def send(body: dict[str, Any]) -> tuple[float, int, str, bool]:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
            session.trust_env = False
        started = time.perf_counter()
        answer = session.post(url, json=body, headers=headers, timeout=30)
        elapsed = (time.perf_counter() - started) * 1000
        duplicate = answer.status_code == 200 and answer.json().get("duplicate") is True
        return elapsed, answer.status_code, answer.headers.get("X-Bench-Queries", "0"), duplicate

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=senders) as pool:
        results = list(pool.map(send, bodies))
    seconds = time.perf_counter() - started
    latencies = [r[0] for r in results]
    return {
        "seconds": seconds,
        "latencies": latencies,
        "errors": sum(r[1] != 200 for r in results),
        "queries": [int(r[2]) for r in results],
        "duplicates_answered": sum(r[3] for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Webhook benchmark (see bench/README.md).")
    parser.add_argument("--deliveries", default="200,800,1600", help="per sender level 1,8,32")
    parser.add_argument("--senders", default="1,8,32")
    parser.add_argument("--duplicates", type=float, default=0.1, help="share of repeats")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--drain-timeout", type=float, default=300)
    args = parser.parse_args()
    if not have_postgres():
        raise SystemExit("PostgreSQL needed: run it through bench/run (it starts a cluster).")
    levels = [int(v) for v in args.senders.split(",")]
    counts = [int(v) for v in args.deliveries.split(",")]
    context = machine()
    rng = random.Random(10)
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        fake.control("seed", {"count": 1000, "seed": 1})
        items = charges(fake, 1000)
        dbs = Databases(Path(tmp))
        db = dbs.fresh("postgres", "paycharge_bench_webhooks")
        env = bench_env(
            "postgres",
            db,
            BENCH_GATEWAY_URL=fake.base_url,
            BENCH_TASKS="1",
            BENCH_WEBHOOK_TOKEN=TOKEN,
        )
        port = free_port()
        procs = [
            subprocess.Popen(
                [PYTHON, "-m", "gunicorn", "bench.wsgi:application", "-w", str(args.workers),
                 "-b", f"127.0.0.1:{port}", "--log-level", "warning"],
                cwd=ROOT, env=env,
            ),
            subprocess.Popen(
                [PYTHON, "bench/manage.py", "db_worker", "--interval", "0.05",
                 "--no-startup-delay"],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
            ),
        ]  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}{PATH}"
            wait_http(url, 30)
            unique: set[str] = set()
            sent_duplicates = 0
            for senders, count in zip(levels, counts, strict=True):
                bodies = plan(items, count, args.duplicates, rng)
                ids = [b["id"] for b in bodies]
                sent_duplicates += len(ids) - len(set(ids))
                unique.update(ids)
                result = send_all(url, bodies, senders)
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
            drained, counts_at_end = _drain(db, len(unique), args.drain_timeout)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
            dbs.drop_all()
    print(
        table(
            f"Webhook receiver: gunicorn {args.workers} workers, PostgreSQL, background "
            "processing (django-tasks-db worker)",
            ["senders", "deliveries", "of which repeats", "deliveries/s", "p50 ms", "p95 ms",
             "p99 ms", "queries/delivery", "non-200"],
            rows,
        )
    )  # fmt: skip
    print()
    print(
        table(
            "Exactly once, counted after the worker drained the queue",
            ["unique sent", "stored", "processed", "lost", "processed twice", "drained in s"],
            [
                [
                    len(unique),
                    counts_at_end["stored"],
                    counts_at_end["processed"],
                    len(unique) - counts_at_end["stored"],
                    counts_at_end["twice"],
                    drained,
                ]
            ],
        )
    )
    print(f"\n{context}; repeats sent: {sent_duplicates}")


def _drain(db: str, expected: int, timeout: float) -> tuple[float, dict[str, int]]:
    started = time.monotonic()
    with pg_connect(db) as conn:
        while True:
            stored, processed, twice = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE status = 'processed'), "
                "count(*) FILTER (WHERE attempts > 1) FROM django_paycharge_webhookdelivery"
            ).fetchone()
            done = (
                processed
                + conn.execute(
                    "SELECT count(*) FROM django_paycharge_webhookdelivery "
                    "WHERE status IN ('failed', 'ignored')"
                ).fetchone()[0]
            )
            if done >= expected or time.monotonic() - started > timeout:
                break
            time.sleep(0.5)
    counts = {"stored": stored, "processed": processed, "twice": twice}
    return time.monotonic() - started, counts


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    main()
