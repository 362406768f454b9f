"""The sync against its fair contender: a plain sync doing the same work a row, on the clock.

    bench/run sync-fair [--n 10000] [--rounds 5] [--latencies 0,50] [--sqlite-only|--postgres-only]

A plain sync (``bench._sync_fair``: requests and json, every column,
the canonical ``raw`` and its digest, the database's fastest write a page),
read one page at a time (``plain``) and with 8 windows of creation time side by
side (``plain, 8 windows``), against ours (``services.sync_charges(full=True)``,
its default windows). N charges are seeded once in the fake gateway, which makes
every request wait the latency; each round, every contender in turn (the first
place moving) syncs them into a fresh migrated mirror in a process of its own.
A round whose mirrors differ is refused: each contender must build the same one.

Printed per database and latency: rows/s (median of the rounds, range), ours'
ratio to each contender (the median of the rounds' own ratios, range: the
contenders of a round ran in the same minutes), and CPU a row: the client's
(every thread), PostgreSQL's (the whole throwaway cluster) and the fake's.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench._common import (
    Databases,
    bench_env,
    fake_server,
    have_postgres,
    machine,
    run_worker,
    table,
)

CONTENDERS = {
    "ours": ("bench._sync_workers", ["ours"]),
    "plain": ("bench._sync_fair", ["--windows", "1"]),
    "plain, 8 windows": ("bench._sync_fair", ["--windows", "8"]),
}
HEADERS = [
    "database",
    "latency ms",
    "contender",
    "rows/s",
    "range",
    "ours / this (range)",
    "client CPU ms/row",
    "DB CPU ms/row",
    "gateway CPU ms/row",
]


def main() -> None:
    parser = argparse.ArgumentParser(description="The sync against its fair contender.")
    parser.add_argument("--n", type=int, default=10_000, help="charges on the gateway")
    parser.add_argument("--rounds", type=int, default=5, help="turns of every contender")
    parser.add_argument("--latencies", default="0,50", help="milliseconds a request")
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    args = parser.parse_args()
    vendors = [] if args.postgres_only else ["sqlite"]
    vendors += [] if args.sqlite_only or not have_postgres() else ["postgres"]
    latencies = [int(x) for x in args.latencies.split(",")]
    context = machine()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        dbs = Databases(Path(tmp))
        fake.reseed(args.n)
        gateway = {"BENCH_GATEWAY_URL": fake.base_url, "BENCH_GATEWAY_PID": str(fake.process.pid)}
        try:
            for vendor in vendors:
                for latency in latencies:
                    fake.set_latency(latency / 1000)
                    runs = _rounds(dbs, vendor, gateway, args)
                    rows += _rows(vendor, latency, runs)
        finally:
            fake.set_latency(0)
            dbs.drop_all()
    title = f"Sync of {args.n:,} new charges against the fair contender, "
    title += f"median of {args.rounds} rounds (range)"
    print(table(title, HEADERS, rows))
    print(f"\n{context}")


def _rounds(
    dbs: Databases, vendor: str, gateway: dict[str, str], args: Any
) -> dict[str, list[dict[str, Any]]]:
    names = list(CONTENDERS)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for n in range(args.rounds):
        mirrors = set()
        for name in names[n % len(names) :] + names[: n % len(names)]:
            module, worker = CONTENDERS[name]
            db = dbs.fresh(vendor, "paycharge_bench_fair")
            env = bench_env(vendor, db, **gateway)
            result = run_worker(module, [*worker, "--limit", str(args.n)], env, timeout=3600)
            if result["rows"] != args.n:
                raise SystemExit(f"{vendor}/{name}: read {result['rows']} rows, not {args.n}")
            mirrors.add(result["mirror"])
            runs[name].append(result)
        if len(mirrors) != 1:
            raise SystemExit(f"{vendor}, round {n + 1}: the contenders built different mirrors")
    return runs


def _rows(vendor: str, latency: int, runs: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    ours = [_rate(r) for r in runs["ours"]]
    rows = []
    for name, results in runs.items():
        rates = [_rate(r) for r in results]
        ratios = [a / b for a, b in zip(ours, rates, strict=True)]
        rows.append(
            [
                vendor,
                latency,
                name,
                statistics.median(rates),
                f"{min(rates):,.0f}-{max(rates):,.0f}",
                "-" if name == "ours" else
                f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}x-{max(ratios):.2f}x)",
                _per_row(results, "cpu"),
                _per_row(results, "db_cpu"),
                _per_row(results, "gateway_cpu"),
            ]
        )  # fmt: skip
    return rows


def _rate(result: dict[str, Any]) -> float:
    return float(result["rows"] / result["seconds"])


def _per_row(results: list[dict[str, Any]], key: str) -> str:
    values = [r[key] / r["rows"] * 1000 for r in results if r.get(key) is not None]
    return f"{statistics.median(values):.3f}" if values else "-"


if __name__ == "__main__":
    main()
