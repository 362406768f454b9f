"""Sync benchmark: charges from the fake gateway's HTTP server into an empty mirror.

    bench/run sync [--n 10000] [--baseline-n 10000] [--memory-check]

For each database (SQLite file; PostgreSQL when ``PAYCHARGE_TEST_PG_*`` is set,
which ``bench/run`` does), and for each contender in its own process:

- ``ours``: ``services.sync_charges(full=True)`` (what ``paycharge_sync --full`` runs);
- ``baseline``: the official SDK's list pages + ``update_or_create`` per charge
  (run on the first ``--baseline-n`` charges: it is ~100x slower);
- ``copy`` (PostgreSQL): the machine's limit, COPY into a temp table + one
  guarded ``INSERT ... ON CONFLICT`` per page, database time only.

Each runs twice: into the empty mirror (inserts), then after the fake is reset
and reseeded with the same ids and new bodies (every row an update).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bench._common import (
    Databases,
    FakeServer,
    bench_env,
    fake_server,
    have_postgres,
    machine,
    run_worker,
    table,
)

WORKER = "bench._sync_workers"


def run_contender(
    fake: FakeServer, dbs: Databases, vendor: str, contender: str, n: int, limit: int
) -> dict[str, dict[str, Any]]:
    """Both phases of one contender on a fresh mirror; the fake is reseeded before each."""
    db = dbs.fresh(vendor, f"paycharge_bench_{contender}")
    env = bench_env(vendor, db, BENCH_GATEWAY_URL=fake.base_url)
    results = {}
    for phase in ("insert", "update"):
        fake.reseed(n)
        results[phase] = run_worker(WORKER, [contender, "--limit", str(limit)], env, timeout=1800)
        _check(contender, phase, results[phase], min(n, limit))
    return results


def _check(contender: str, phase: str, result: dict[str, Any], expected: int) -> None:
    """A benchmark that did not do the work would measure nothing: refuse to print it."""
    if result["rows"] != expected:
        raise SystemExit(f"{contender}/{phase}: read {result['rows']} rows, expected {expected}")
    counts = result["counts"]
    key = "created" if phase == "insert" else "updated"
    if key in counts and counts[key] != expected:
        raise SystemExit(f"{contender}/{phase}: {key} {counts[key]} rows, expected {expected}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Sync benchmark (see bench/README.md).")
    parser.add_argument("--n", type=int, default=10_000, help="charges on the gateway")
    parser.add_argument("--baseline-n", type=int, default=10_000, help="rows the baseline syncs")
    parser.add_argument(
        "--memory-check",
        action="store_true",
        help="also compare ours' peak RSS at 10,000 and 100,000 charges (SQLite)",
    )
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument(
        "--skip-sdk", action="store_true", help="leave the baseline out (no SDK installed)"
    )
    args = parser.parse_args()
    vendors = ["sqlite"] + ([] if args.sqlite_only or not have_postgres() else ["postgres"])
    context = machine()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        dbs = Databases(Path(tmp))
        try:
            for vendor in vendors:
                ours = run_contender(fake, dbs, vendor, "ours", args.n, args.n)
                base = (
                    None
                    if args.skip_sdk
                    else run_contender(fake, dbs, vendor, "baseline", args.n, args.baseline_n)
                )
                limit = (
                    run_contender(fake, dbs, vendor, "copy", args.n, args.n)
                    if vendor == "postgres"
                    else None
                )
                for phase in ("insert", "update"):
                    rows += _rows(
                        vendor, phase, ours[phase], base and base[phase], limit and limit[phase]
                    )
            memory = _memory(fake, dbs) if args.memory_check else None
        finally:
            dbs.drop_all()
    print(
        table(
            f"Sync of {args.n:,} charges (baseline on {min(args.n, args.baseline_n):,})",
            [
                "database",
                "phase",
                "contender",
                "rows/s",
                "ours / baseline",
                "ours / COPY limit",
                "queries/page",
                "peak RSS MB",
            ],
            rows,
        )
    )
    if memory:
        print()
        print(
            table(
                "Peak RSS of ours (SQLite, inserts) by N",
                ["N", "peak RSS MB", "rows/s"],
                [[n, r["peak_rss_mb"], r["rows"] / r["seconds"]] for n, r in memory],
            )
        )
    print(f"\n{context}")


def _rows(
    vendor: str,
    phase: str,
    ours: dict[str, Any],
    base: dict[str, Any] | None,
    limit: dict[str, Any] | None,
) -> list[list[Any]]:
    def rate(r: dict[str, Any]) -> float:
        return float(r["rows"] / r["seconds"])

    def per_page(r: dict[str, Any]) -> float:
        return float(r["queries"] / max(1, r["pages"]))

    nan = float("nan")
    out = [
        [
            vendor,
            phase,
            "ours",
            rate(ours),
            f"{rate(ours) / rate(base):.1f}x" if base else "-",
            f"{rate(ours) / rate(limit):.2f}" if limit else "-",
            per_page(ours),
            ours["peak_rss_mb"],
        ],
    ]
    if base:
        name = "baseline (SDK + update_or_create)"
        out.append([vendor, phase, name, rate(base), "", "", per_page(base), base["peak_rss_mb"]])
    if limit:
        out.append(
            [vendor, phase, "COPY + upsert (limit)", rate(limit), "", "", per_page(limit), nan]
        )
    return out


def _memory(fake: FakeServer, dbs: Databases) -> list[tuple[int, dict[str, Any]]]:
    results = []
    for n in (10_000, 100_000):
        db = dbs.fresh("sqlite", f"paycharge_bench_memory_{n}")
        fake.reseed(n)
        env = bench_env("sqlite", db, BENCH_GATEWAY_URL=fake.base_url)
        result = run_worker(WORKER, ["ours"], env, timeout=1800)
        _check("ours", "insert", result, n)
        results.append((n, result))
    return results


if __name__ == "__main__":
    main()
