"""Smoke tests of the benchmarks (bench/): each runs with a tiny N and does its work.

The benchmarks themselves are never part of the suite (CI time). The official
SDK and gunicorn are installed only for them (the ``bench`` extra), so what
needs them (the sync baseline, the SDK rows of the client benchmark, the
webhook benchmark) is run by ``bench/run``, not here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import _sync_workers, admin_changelist, sync
from bench._common import table
from django_paycharge.models import Charge

ROOT = Path(__file__).resolve().parents[2]


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
        timeout=120,
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
    assert [r["variant"] for r in results] == ["no filter", "status", "mode"]
    assert all(r["queries"] > 0 and r["ms"] > 0 for r in results)


def test_the_sync_table_shows_ratios_to_the_baseline_and_the_limit():
    ours = {"rows": 1000, "seconds": 1.0, "queries": 40, "pages": 10, "peak_rss_mb": 60.0}
    base = {**ours, "seconds": 20.0, "queries": 4000}
    limit = {**ours, "seconds": 0.5, "queries": 20}
    rows = sync._rows("postgres", "insert", ours, base, limit)
    assert rows[0][:8] == ["postgres", "insert", "ours", 1000.0, "20.0x", "0.50", 4.0, 60.0]
    assert [r[2] for r in rows[1:]] == [
        "baseline (SDK + update_or_create)",
        "COPY + upsert (limit)",
    ]
    text = table("t", ["a", "b"], [[1234, 0.5], ["x", float("nan")]])
    assert "| 1,234 | 0.5 |" in text
    assert "| x     | -   |" in text


def test_the_client_benchmark_prints_its_table():
    out = run_bench("bench.client", "--calls", "20", "--pages", "3", "--rounds", "1", "--skip-sdk")
    assert "ours (PayChargeClient)" in out
    assert "raw requests + json.loads (floor)" in out
