"""Sync benchmark: charges from the fake gateway's HTTP server into an empty mirror.

    bench/run sync [--n 10000] [--baseline-n 10000] [--rounds 3] [--memory-check]

For each database (SQLite file; PostgreSQL when ``PAYCHARGE_TEST_PG_*`` is set,
which ``bench/run`` does), and for each contender in its own process:

- ``ours``: ``services.sync_charges(full=True)`` (what ``paycharge_sync --full`` runs);
- ``baseline``: the official SDK's list pages + ``update_or_create`` per charge
  (run on the first ``--baseline-n`` charges: it is ~100x slower);
- ``copy`` (PostgreSQL): the machine's limit, COPY into a temp table + one
  guarded ``INSERT ... ON CONFLICT`` per page, database time only.

Each runs twice: into the empty mirror (inserts), then after the fake is reset
and reseeded with the same ids and new bodies (every row an update).

The contenders take turns, round after round (``--rounds``, 3 by default), so
each round's contenders run in the same minute: a ratio is the median of the
rounds' ratios, a rate the median of the rounds' rates, and the range of
each is printed beside it. On this 2-core VM the host's speed moves within
minutes, and one round's ratio moved with it.
"""

from __future__ import annotations

import argparse
import statistics
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
    parser.add_argument(
        "--rounds", type=int, default=3, help="turns of every contender (medians are printed)"
    )
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument(
        "--skip-sdk", action="store_true", help="leave the baseline out (no SDK installed)"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    vendors = ["sqlite"] + ([] if args.sqlite_only or not have_postgres() else ["postgres"])
    context = machine()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        dbs = Databases(Path(tmp))
        try:
            for vendor in vendors:
                runs: dict[str, list[dict[str, dict[str, Any]]]] = {}
                for _ in range(args.rounds):
                    for contender, rows_to_sync in _contenders(vendor, args):
                        result = run_contender(fake, dbs, vendor, contender, args.n, rows_to_sync)
                        runs.setdefault(contender, []).append(result)
                for phase in ("insert", "update"):
                    rows += _rows(
                        vendor, phase, *([r[phase] for r in runs.get(c, [])] for c in CONTENDERS)
                    )
            memory = _memory(fake, dbs) if args.memory_check else None
        finally:
            dbs.drop_all()
    title = f"Sync of {args.n:,} charges (baseline on {min(args.n, args.baseline_n):,})"
    if args.rounds > 1:
        title += f", median of {args.rounds} rounds (range)"
    print(
        table(
            title,
            [
                "database",
                "phase",
                "contender",
                "rows/s",
                "range",
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


CONTENDERS = ("ours", "baseline", "copy")


def _contenders(vendor: str, args: argparse.Namespace) -> list[tuple[str, int]]:
    """(contender, rows it syncs) in the order of a round."""
    out = [("ours", args.n)]
    if not args.skip_sdk:
        out.append(("baseline", args.baseline_n))
    if vendor == "postgres":
        out.append(("copy", args.n))
    return out


def _rows(
    vendor: str,
    phase: str,
    ours: list[dict[str, Any]],
    base: list[dict[str, Any]],
    limit: list[dict[str, Any]],
) -> list[list[Any]]:
    """Table rows of one phase from every round's results (a list per contender)."""

    def rate(r: dict[str, Any]) -> float:
        return float(r["rows"] / r["seconds"])

    def rates(results: list[dict[str, Any]]) -> list[float]:
        return [rate(r) for r in results]

    def spread(values: list[float], fmt: str) -> str:
        return f"{fmt.format(min(values))}-{fmt.format(max(values))}" if len(values) > 1 else ""

    def ratio(against: list[dict[str, Any]], fmt: str) -> str:
        if not against:
            return "-"
        # Each round's contenders ran back to back: compare within a round.
        values = [rate(o) / rate(a) for o, a in zip(ours, against, strict=True)]
        low_high = spread(values, fmt)
        middle = fmt.format(statistics.median(values))
        return f"{middle} ({low_high})" if low_high else middle

    def row(
        name: str,
        results: list[dict[str, Any]],
        vs_base: str = "",
        vs_limit: str = "",
        *,
        memory: bool = True,
    ) -> list[Any]:
        first = results[0]
        return [
            vendor,
            phase,
            name,
            statistics.median(rates(results)),
            spread(rates(results), "{:,.0f}"),
            vs_base,
            vs_limit,
            float(first["queries"] / max(1, first["pages"])),
            max(r["peak_rss_mb"] for r in results) if memory else float("nan"),
        ]

    out = [row("ours", ours, ratio(base, "{:.1f}x"), ratio(limit, "{:.2f}"))]
    if base:
        out.append(row("baseline (SDK + update_or_create)", base))
    if limit:
        # The limit's process holds every page from the start: its memory is not comparable.
        out.append(row("COPY + upsert (limit)", limit, memory=False))
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
