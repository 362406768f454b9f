"""Smoke tests of the benchmarks (bench/): each runs with a tiny N and does its work.

The benchmarks themselves are never part of the suite (CI time). The official
SDK and gunicorn are installed only for them (the ``bench`` extra), so what
needs them (the sync baseline, the SDK rows of the client benchmark, the
webhook benchmark) is run by ``bench/run``, not here.
"""

from __future__ import annotations

import http.server
import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from bench import _sync_workers, admin_changelist, receivers, sync, webhooks
from bench._common import table
from django_paycharge.models import Charge

ROOT = Path(__file__).resolve().parents[2]


CREATE = "create_charge, caller's key"


def cells(line: str) -> list[str]:
    """A Markdown table row's cells."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def run_bench(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in [k for k in env if k.startswith(("DJANGO_SETTINGS", "PAYCHARGE_TEST_PG"))]:
        del env[name]  # SQLite only, and the benchmark's own settings
    done = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # a bound for a hang, not a speed: the run took 120 s at load 14
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.django_db(transaction=True)
def test_the_sync_worker_syncs_every_charge_and_counts_its_queries(fake_gateway):
    fake_gateway.seed(250)
    first = _sync_workers.ours(10**9)
    assert first["rows"] == 250
    assert first["counts"]["created"] == 250
    assert first["pages"] == 3
    # A constant number of statements per page, whatever N.
    assert first["queries"] <= 6 * first["pages"] + 6
    assert Charge.objects.count() == 250


@pytest.mark.django_db
def test_the_admin_benchmark_fills_the_mirror_and_renders_its_pages():
    admin_changelist.fill(60)
    assert Charge.objects.count() == 60
    admin_changelist.fill(80)  # tops up to the total
    assert Charge.objects.count() == 80
    results = admin_changelist.measure(renders=1, variants=3)
    assert [r["variant"] for r in results] == ["no filter", "status", "status: rare"]
    assert all(r["queries"] > 0 and r["ms"] > 0 and r["cpu"] >= 0 for r in results)
    ranges = admin_changelist.measure(renders=1, pages=["amount b"])
    assert [r["variant"] for r in ranges] == ["amount between", "store + amount between"]


def test_the_sync_table_shows_the_floor_and_ratios_within_rounds():
    ours = {"rows": 1000, "seconds": 0.2, "queries": 40, "pages": 10, "peak_rss_mb": 60.0}
    today = {**ours, "seconds": 0.5}
    base = {**ours, "seconds": 4.0}
    [row] = [
        sync._row("postgres", 50, "insert", {"ours": [ours], "today": [today], "baseline": [base]})
    ]
    assert row == [
        "postgres", 50, "insert", 5000.0, "", 2000.0, 250.0, 2000.0, "2.50x", "2.50x", "20.0x", 60.0
    ]  # fmt: skip
    # Three rounds: a host twice as fast in round 2 moves every rate, not the ratio.
    fast = {**ours, "seconds": 0.1, "peak_rss_mb": 61.0}
    got = {
        "ours": [ours, fast, {**ours, "seconds": 0.25}],
        "today": [today, {**today, "seconds": 0.25}, {**today, "seconds": 0.5}],
        "baseline": [],
    }
    row = sync._row("sqlite", 0, "insert", got)
    assert row[3:5] == [5000.0, "4,000-10,000"]
    assert row[8] == "-"  # no floor without latency
    assert row[9] == "2.50x (2.00x-2.50x)" and row[10] == "-"
    assert row[-1] == 61.0
    text = table("t", ["a", "b"], [[1234, 0.5], ["x", float("nan")]])
    assert "| 1,234 | 0.5 |" in text
    assert "| x     | -   |" in text


@pytest.mark.own_database  # run_bench: SQLite and the benchmark's settings
def test_the_sync_benchmark_runs_ours_against_todays_code_at_a_latency(tmp_path):
    out = run_bench(
        "bench.sync", "--n", "300", "--rounds", "1", "--latencies", "0,20", "--skip-sdk",
        "--sqlite-only",
    )  # fmt: skip
    assert "| sqlite   | 20         | insert |" in out
    assert "ours / today" in out


@pytest.mark.own_database  # run_bench: SQLite and the benchmark's settings
def test_the_client_benchmark_prints_its_tables():
    out = run_bench(
        "bench.client", "--calls", "20", "--pages", "3", "--rounds", "2", "--skip-sdk",
        "--money-calls", "4", "--reference", "HEAD", "--django-defaults",
    )  # fmt: skip
    assert "ours (PayChargeClient)" in out
    assert "raw requests + json.loads (floor)" in out
    rows = [cells(line) for line in out.splitlines() if line.startswith("| sqlite")]
    # Create, capture and refund through the services, against raw requests (SQLite here).
    for call, service in (("create", "create_charge, caller's key"), ("capture", "service"),
                          ("refund", "service")):  # fmt: skip
        row = next(r for r in rows if r[:4] == ["sqlite", "this tree", call, service])
        assert "x (" in row[5]  # its rate against raw requests', with the rounds' range
    # The reference commit's code took its rounds in turn with this tree's (a git checkout).
    assert "no git checkout" in out or any(r[:3] == ["sqlite", "HEAD", "create"] for r in rows)
    # A create against the checkout's fair floor too, with kept connections and with
    # Django's defaults (a connection a call).
    for database in ("sqlite", "sqlite, Django's defaults"):
        row = next(r for r in rows if r[:4] == [database, "this tree", "create", CREATE])
        assert "x (" in row[5] and "x (" in row[6], row
    assert "plain: POST + two writes" in out


@pytest.mark.own_database  # run_bench: SQLite and the benchmark's settings
def test_the_sync_runs_against_its_fair_contender_and_they_build_the_same_mirror():
    out = run_bench("bench.sync_fair", "--n", "300", "--rounds", "1", "--latencies", "0")
    rows = [cells(line) for line in out.splitlines() if line.startswith("| sqlite")]
    for contender in ("plain", "plain, 8 windows"):
        row = next(r for r in rows if r[2] == contender)
        assert row[:2] == ["sqlite", "0"] and "x (" in row[5], row


class _Receiver(http.server.BaseHTTPRequestHandler):
    """Answers like the webhook view; closes connections after some answers.

    Every third answer says so (``Connection: close``, as gunicorn's sync
    workers do); every fifth closes without a word, as a server dropping an
    idle kept-alive connection: the next request on it must be sent again.
    """

    protocol_version = "HTTP/1.1"
    seen: list[str] = []
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            duplicate = body["id"] in self.seen
            self.seen.append(body["id"])
            count = len(self.seen)
        answer = json.dumps({"status": "ok", "duplicate": duplicate}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.send_header("X-Bench-Queries", "2")
        if count % 3 == 0:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(answer)
        self.close_connection = count % 3 == 0 or count % 5 == 0

    def log_message(self, *args):
        pass


def test_the_webhook_senders_keep_connections_alive_and_reopen_closed_ones():
    _Receiver.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        items = [{"id": str(n), "created_on": "2026-11-22T00:00:00Z"} for n in range(5)]
        bodies = webhooks.plan(items, 60, 0.2, random.Random(1))
        ids = [b["id"] for b in bodies]
        result = webhooks.send_all(server.server_address[1], bodies, senders=4)
    finally:
        server.shutdown()
        server.server_close()
    assert len(set(ids)) < len(ids)  # repeats mixed in
    assert sorted(_Receiver.seen) == sorted(ids)  # each body sent once, none lost
    assert result["errors"] == 0
    assert result["resent"] > 0
    assert result["duplicates_answered"] == len(ids) - len(set(ids))
    assert result["queries"] == [2] * 60
    assert len(result["latencies"]) == 60 and min(result["latencies"]) > 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="CPU times come from /proc")
def test_the_webhook_benchmark_reads_cpu_time_of_a_process_tree():
    child = subprocess.Popen([sys.executable, "-c", "sum(range(3_000_000))"])
    meter = webhooks.CpuMeter({"me": os.getpid()})
    child.wait()  # reaped: its time counts too
    sum(range(1_000_000))
    assert meter.lap()["me"] > 0


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
@pytest.mark.parametrize(
    ("nice", "policy", "niceness"), [("idle", "SCHED_IDLE", 0), ("10", "SCHED_OTHER", 10)]
)
def test_the_webhook_benchmark_starts_its_worker_at_the_priority_asked(nice, policy, niceness):
    probe = "import os; print(os.sched_getscheduler(0), os.nice(0))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        preexec_fn=webhooks._priority(nice),
        capture_output=True,
        text=True,
        check=True,
    )
    seen_policy, seen_nice = (int(v) for v in done.stdout.split())
    assert seen_policy == getattr(os, policy)
    assert seen_nice == min(19, os.nice(0) + niceness)


@pytest.mark.own_database  # run_bench: SQLite and the benchmark's settings
def test_the_csv_benchmark_exports_with_refunds_against_its_floor_and_reports():
    out = run_bench(
        "bench.csv_export",
        *("--n", "60", "--small", "30", "--rounds", "1", "--refunds", "0.3", "--sqlite-only"),
    )
    assert "Admin CSV export of every charge: 60 rows" in out
    assert "| 30% (18) " in out  # the mirror carries its refunds
    assert "ours, after" in out
    assert "values_list" in out


@pytest.mark.django_db
def test_the_dashboard_benchmark_fills_dresses_and_renders():
    from bench import dashboard
    from django_paycharge.models import Refund

    admin_changelist.fill(200)
    dashboard.dress(every=5)
    assert Refund.objects.exists()
    assert not Charge.objects.filter(status="failed", error__isnull=True).exists()
    results = dashboard.measure(renders=2)
    assert [r["mode"] for r in results] == ["test", "live"]
    assert all(r["queries"] > 0 and r["p50"] > 0 for r in results)


def test_the_telemetry_benchmark_times_the_hooks_alone(settings):
    from bench import telemetry

    # An override of its own: the benchmark's settings changes end with the test.
    settings.PAYCHARGE = dict(settings.PAYCHARGE)

    assert telemetry._hooks_alone("off", 100) > 0
    assert telemetry._hooks_alone("prometheus", 100) > 0


def test_the_receivers_table_compares_each_receiver_with_none_of_the_same_code_and_round():
    def result(seconds: float) -> dict[str, Any]:
        return {"rows": 1000, "seconds": seconds, "cpu": 0.5, "db_cpu": None, "gateway_cpu": 0.1}

    runs = {
        ("this", "none"): [result(1.0), result(2.0)],
        ("this", "readme"): [result(1.25), result(4.0)],
        ("main", "none"): [result(1.0), result(1.0)],
        ("main", "readme"): [result(10.0), result(5.0)],
    }
    rows = receivers._rows("sqlite", runs)
    assert [r[:3] for r in rows] == [
        ["sqlite", "this", "none"], ["sqlite", "this", "readme"],
        ["sqlite", "main", "none"], ["sqlite", "main", "readme"],
    ]  # fmt: skip
    assert [r[5] for r in rows] == ["-", "0.65x (0.50x-0.80x)", "-", "0.15x (0.10x-0.20x)"]
    assert rows[1][3:5] == [525.0, "250-800"]
    assert rows[1][6:] == ["0.500", "-", "0.100"]


def test_the_random_index_benchmark_prints_the_cost_a_row_at_each_size():
    out = run_bench("bench.sqlite_random_index", "--n", "5000").splitlines()
    assert cells(out[0]) == [
        "rows in the table",
        "CPU ms a row, unique random id",
        "CPU ms a row, no unique random id",
    ]
    row = cells(out[2])
    assert row[0] == "5,000"
    assert all(float(cell) > 0 for cell in row[1:])
