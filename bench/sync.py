"""Sync benchmark: charges from the fake gateway's HTTP server into an empty mirror, near and far.

    bench/run sync [--n 10000] [--baseline-n 2000] [--rounds 3] [--latencies 0,30,50,150]
                   [--windows W] [--reference COMMIT] [--update] [--memory-check]
                   [--skip-sdk] [--skip-reference] [--skip-limit] [--sqlite-only|--postgres-only]

The fake's latency control makes every API request (list pages and reads)
wait that many milliseconds: a gateway that far away. For each database
(SQLite file; PostgreSQL when ``PAYCHARGE_TEST_PG_*`` is set, which
``bench/run`` does) and each latency, these contenders take turns, each in
its own process on a fresh migrated database:

- ``ours``: ``services.sync_charges(full=True)`` (what ``paycharge_sync --full`` runs);
- ``today``: the same call on the code of commit ``--reference`` (the sync
  before windows were read side by side), taken out of git: the reference
  this code must not be slower than;
- ``baseline``: the official SDK's list pages + ``update_or_create`` per
  charge (on the first ``--baseline-n`` charges: its rate does not depend on N).

- ``limit``: the database's limit (:mod:`bench._sync_limit`): the same rows,
  fetched and converted off the clock, written the database's fastest way (a
  page per transaction: PostgreSQL ``COPY`` into a temporary table and one
  guarded upsert from it; SQLite one ``executemany`` of the guarded upsert).
  Once a round, between the latencies; its mirror must equal ours.

The one-page network floor is what reading one page at a time would take
with nothing but the latency: 100 rows / latency. Rates are medians over the
rounds (``--rounds``), with their range; a ratio is the median of the
rounds' own ratios (the contenders of a round ran in the same minute), with
its range. On this shared 2-core VM the host's speed moves within minutes.
``--update`` adds a second phase where every row changes (after a reseed).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench._common import (
    ROOT,
    Databases,
    FakeServer,
    bench_env,
    code_at,
    fake_server,
    have_postgres,
    machine,
    run_worker,
    table,
)

WORKER = "bench._sync_workers"
#: Today's sync, the reference: the last commit before windows (main, 2026-11-22).
REFERENCE = "556faa5"
PAGE = 100
CONTENDERS = ("ours", "today", "baseline")
LIMIT_HEADERS = [
    "database",
    "latency ms",
    "contender",
    "rows/s",
    "range",
    "limit rows/s",
    "range ",
    "/ limit",
    "client CPU ms/row",
    "DB CPU ms/row",
    "gateway CPU ms/row",
    "limit client CPU ms/row",
    "limit DB CPU ms/row",
]
HEADERS = [
    "database",
    "latency ms",
    "phase",
    "ours rows/s",
    "range",
    "today rows/s",
    "baseline rows/s",
    "one-page floor",
    "ours / floor",
    "ours / today",
    "ours / baseline",
    "ours peak RSS MB",
]


class Bench:
    """One run's fake gateway, databases and options."""

    def __init__(self, args: argparse.Namespace, fake: FakeServer, workdir: Path) -> None:
        self.args, self.fake, self.dbs = args, fake, Databases(workdir)
        self.reference = None if args.skip_reference else code_at(args.reference, workdir)
        if self.reference is None and not args.skip_reference:
            print(f"(no git checkout: the reference {args.reference} is left out)")

    def contenders(self) -> list[str]:
        skip = {"today"} if self.reference is None else set()
        skip |= {"baseline"} if self.args.skip_sdk else set()
        return [c for c in CONTENDERS if c not in skip]

    def gateway(self) -> dict[str, str]:
        """The fake gateway of a worker: its URL, and its process (its CPU is measured)."""
        return {
            "BENCH_GATEWAY_URL": self.fake.base_url,
            "BENCH_GATEWAY_PID": str(self.fake.process.pid),
        }

    def run(self, vendor: str, contender: str, latency_ms: int) -> dict[str, dict[str, Any]]:
        """Each phase of one contender at one latency, on a fresh mirror."""
        code = self.reference if contender == "today" else None
        db = self.dbs.fresh(vendor, f"paycharge_bench_{contender}", code)
        env = bench_env(vendor, db, code, **self.gateway())
        limit = self.args.baseline_n if contender == "baseline" else self.args.n
        worker = ["baseline" if contender == "baseline" else "ours", "--limit", str(limit)]
        if contender == "ours" and self.args.windows:
            worker += ["--windows", str(self.args.windows)]
        results = {}
        for phase in self.phases():
            if self.args.update:  # the update phase needs new bodies for the same ids
                self.fake.reseed(self.args.n)
            self.fake.set_latency(latency_ms / 1000)
            results[phase] = run_worker(WORKER, worker, env, timeout=3600, cwd=code or ROOT)
            _check(contender, phase, results[phase], min(self.args.n, limit))
        return results

    def run_limit(self, vendor: str) -> dict[str, Any]:
        """The database's limit on a fresh mirror (its pages fetched at no latency)."""
        db = self.dbs.fresh(vendor, "paycharge_bench_limit")
        env = bench_env(vendor, db, **self.gateway())
        if self.args.update:
            self.fake.reseed(self.args.n)
        self.fake.set_latency(0)
        result: dict[str, Any] = run_worker(
            WORKER, ["limit", "--limit", str(self.args.n)], env, timeout=3600
        )
        _check("limit", "insert", result, self.args.n)
        return result

    def phases(self) -> list[str]:
        return ["insert", "update"] if self.args.update else ["insert"]


def _check(contender: str, phase: str, result: dict[str, Any], expected: int) -> None:
    """A benchmark that did not do the work would measure nothing: refuse to print it."""
    if result["rows"] != expected:
        raise SystemExit(f"{contender}/{phase}: read {result['rows']} rows, expected {expected}")
    key = "created" if phase == "insert" else "updated"
    counts = result["counts"]
    if key in counts and counts[key] != expected:
        raise SystemExit(f"{contender}/{phase}: {key} {counts[key]} rows, expected {expected}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Sync benchmark (see bench/README.md).")
    parser.add_argument("--n", type=int, default=10_000, help="charges on the gateway")
    parser.add_argument("--baseline-n", type=int, default=2_000, help="rows the baseline syncs")
    parser.add_argument("--rounds", type=int, default=3, help="turns of every contender")
    parser.add_argument(
        "--latencies", default="0,30,50,150", help="milliseconds per request, comma-separated"
    )
    parser.add_argument("--windows", type=int, help="ours: windows read side by side")
    parser.add_argument("--reference", default=REFERENCE, help="commit of today's code")
    parser.add_argument("--update", action="store_true", help="also a phase of all updates")
    parser.add_argument(
        "--memory-check",
        action="store_true",
        help="also ours' peak RSS at 10,000 and 100,000 charges (SQLite, 0 ms)",
    )
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    parser.add_argument("--skip-sdk", action="store_true", help="leave the baseline out")
    parser.add_argument("--skip-reference", action="store_true", help="leave today's code out")
    parser.add_argument("--skip-limit", action="store_true", help="leave the database's limit out")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    latencies = [int(x) for x in args.latencies.split(",")]
    vendors = [] if args.postgres_only else ["sqlite"]
    vendors += [] if args.sqlite_only or not have_postgres() else ["postgres"]
    context = machine()
    rows: list[list[Any]] = []
    limit_rows: list[list[Any]] = []
    limit_runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        bench = Bench(args, fake, Path(tmp))
        if not args.update:
            fake.reseed(args.n)  # one gateway for every insert run
        try:
            for vendor in vendors:
                # runs[latency][contender]: one result (of every phase) per round
                runs: dict[int, dict[str, list[dict[str, dict[str, Any]]]]] = {}
                limits: list[dict[str, Any]] = []
                for n in range(args.rounds):
                    if not args.skip_limit and n % 2 == 0:  # first in one round, last in the next
                        limits.append(bench.run_limit(vendor))
                    for latency in latencies:
                        order = bench.contenders()
                        order = order[n % len(order) :] + order[: n % len(order)]  # take turns
                        for contender in order:
                            result = bench.run(vendor, contender, latency)
                            runs.setdefault(latency, {}).setdefault(contender, []).append(result)
                    if not args.skip_limit and n % 2 == 1:
                        limits.append(bench.run_limit(vendor))
                limit_runs[vendor] = limits
                for latency in latencies:
                    for phase in bench.phases():
                        got = {c: [r[phase] for r in runs[latency].get(c, [])] for c in CONTENDERS}
                        rows.append(_row(vendor, latency, phase, got))
                    for contender in ("ours", "today") if limits else ():
                        if contender in runs[latency]:
                            mine = [r["insert"] for r in runs[latency][contender]]
                            row = _limit_row(
                                vendor, latency, contender, mine, limits, not args.update
                            )
                            limit_rows.append(row)
            memory = _memory(bench) if args.memory_check else None
        finally:
            bench.dbs.drop_all()
    title = f"Sync of {args.n:,} charges (baseline on {min(args.n, args.baseline_n):,})"
    title += f", median of {args.rounds} rounds (range)" if args.rounds > 1 else ""
    print(table(title, HEADERS, rows))
    if limit_rows:
        print()
        print(table(_limit_title(args.rounds), LIMIT_HEADERS, limit_rows))
        print(_before_writing(limit_runs))
    if memory:
        print()
        print(
            table(
                "Peak RSS of ours (SQLite, inserts, 0 ms) by N",
                ["N", "peak RSS MB", "rows/s"],
                [[n, r["peak_rss_mb"], r["rows"] / r["seconds"]] for n, r in memory],
            )
        )
    print(f"\n{context}")


def _rate(result: dict[str, Any]) -> float:
    return float(result["rows"] / result["seconds"])


def _spread(values: list[float], fmt: str) -> str:
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}" if len(values) > 1 else ""


def _ratio(values: list[float], fmt: str = "{:.2f}x") -> str:
    if not values:
        return "-"
    middle = fmt.format(statistics.median(values))
    return f"{middle} ({_spread(values, fmt)})" if len(values) > 1 else middle


def _row(vendor: str, latency: int, phase: str, got: dict[str, list[dict[str, Any]]]) -> list[Any]:
    """One table row: every contender's rounds at one latency."""
    ours, today, base = got["ours"], got["today"], got["baseline"]
    rates = [_rate(r) for r in ours]
    floor = PAGE * 1000 / latency if latency else None

    def median(results: list[dict[str, Any]]) -> float:
        return statistics.median(_rate(r) for r in results) if results else float("nan")

    def within_rounds(other: list[dict[str, Any]]) -> list[float]:
        # Each round's contenders ran back to back: compare within a round.
        return [_rate(o) / _rate(a) for o, a in zip(ours, other, strict=False)]

    return [
        vendor,
        latency,
        phase,
        statistics.median(rates),
        _spread(rates, "{:,.0f}"),
        median(today),
        median(base),
        float("nan") if floor is None else floor,
        "-" if floor is None else _ratio([r / floor for r in rates]),
        _ratio(within_rounds(today)),
        _ratio(within_rounds(base), "{:.1f}x"),
        max(r["peak_rss_mb"] for r in ours),
    ]


def _limit_title(rounds: int) -> str:
    return (
        "Ours against the database's limit (PostgreSQL: COPY into a temporary table, then one "
        "guarded upsert a page; SQLite: executemany a page), inserts, medians of "
        f"{rounds} rounds (range)"
    )


def _before_writing(limit_runs: dict[str, list[dict[str, Any]]]) -> str:
    """The CPU the limit's fetches and conversions took off the clock, a row (medians)."""
    parts = [
        f"{vendor}: fetching {_per_row(runs, 'fetch_cpu')} and converting "
        f"{_per_row(runs, 'rows_cpu')} ms/row"
        for vendor, runs in limit_runs.items()
        if runs
    ]
    return "\nClient CPU before any write (the limit's pages, off its clock): " + "; ".join(parts)


def _per_row(results: list[dict[str, Any]], key: str) -> str:
    """Median milliseconds of CPU a row (``-`` where not measured: SQLite has no server)."""
    values = [r[key] / r["rows"] * 1000 for r in results if r.get(key) is not None]
    return f"{statistics.median(values):.3f}" if values else "-"


def _limit_row(
    vendor: str,
    latency: int,
    contender: str,
    mine: list[dict[str, Any]],
    limits: list[dict[str, Any]],
    compare: bool,
) -> list[Any]:
    """A contender at one latency against the limit; each round's against that round's.

    ``compare``: the gateway kept its charges between the runs (no ``--update``
    reseeds), so ours must have written exactly the limit's rows.
    """
    for result, its in zip(mine, limits, strict=False):
        if compare and contender == "ours" and result["mirror"] != its["mirror"]:
            raise SystemExit(f"{vendor} at {latency} ms: ours and the limit wrote different rows")
    rates, limit_rates = [_rate(r) for r in mine], [_rate(r) for r in limits]
    return [
        vendor,
        latency,
        contender,
        statistics.median(rates),
        _spread(rates, "{:,.0f}"),
        statistics.median(limit_rates),
        _spread(limit_rates, "{:,.0f}"),
        _ratio([a / b for a, b in zip(rates, limit_rates, strict=False)]),
        _per_row(mine, "cpu"),
        _per_row(mine, "db_cpu"),
        _per_row(mine, "gateway_cpu"),
        _per_row(limits, "cpu"),
        _per_row(limits, "db_cpu"),
    ]


def _memory(bench: Bench) -> list[tuple[int, dict[str, Any]]]:
    results = []
    for n in (10_000, 100_000):
        db = bench.dbs.fresh("sqlite", f"paycharge_bench_memory_{n}")
        bench.fake.reseed(n)
        env = bench_env("sqlite", db, BENCH_GATEWAY_URL=bench.fake.base_url)
        result = run_worker(WORKER, ["ours"], env, timeout=3600)
        _check("ours", "insert", result, n)
        results.append((n, result))
    return results


if __name__ == "__main__":
    main()
