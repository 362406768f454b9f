"""Receivers benchmark: a sync with the README's receiver beside the same sync without one.

    bench/run receivers [--n 3000] [--rounds 3] [--windows W] [--reference COMMIT]
                        [--receivers none,readme,noop] [--sqlite-only|--postgres-only]

Issue 43: any ``charge_status_changed`` receiver made a sync 10 to 20 times
slower. N charges are seeded once in the fake gateway (no latency: the
receivers' cost is not hidden behind the network); in each of ``--rounds``
rounds these take turns (the first place moving), each in its own process on
a fresh migrated mirror, ``services.sync_charges(full=True)`` with:

- ``none``: no receiver of the charge signals;
- ``readme``: the README's receiver (``charge_status_changed``, one log line a
  change, written to a file);
- ``noop``: a receiver that does nothing.

``--reference COMMIT`` runs the same on that commit's code (``git archive``),
in the same rounds: the figures before a change beside those after it. Each
receiver's runs are counted: a run that did not hear every charge is refused.

Printed: rows/s (median of the rounds, range), the ratio to ``none`` of the
same code (the median of the rounds' own ratios, with their range: the
contenders of a round ran in the same minutes), and CPU a row: the client's
(every thread), PostgreSQL's (the whole throwaway cluster) and the fake
gateway's.
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
    bench_env,
    code_at,
    fake_server,
    have_postgres,
    machine,
    run_worker,
    table,
)

WORKER = "bench._receivers_worker"
HEADERS = [
    "database",
    "code",
    "receiver",
    "rows/s",
    "range",
    "/ none (same code)",
    "client CPU ms/row",
    "DB CPU ms/row",
    "gateway CPU ms/row",
]


def run(
    dbs: Databases, fake: Any, vendor: str, receiver: str, code: Path | None, args: Any
) -> dict[str, Any]:
    """One sync of every charge on a fresh mirror with ``receiver`` connected."""
    db = dbs.fresh(vendor, f"paycharge_bench_receivers_{receiver}", code)
    env = bench_env(
        vendor,
        db,
        code,
        BENCH_GATEWAY_URL=fake.base_url,
        BENCH_GATEWAY_PID=str(fake.process.pid),
    )
    worker = [receiver, "--limit", str(args.n)]
    if args.windows:
        worker += ["--windows", str(args.windows)]
    result: dict[str, Any] = run_worker(WORKER, worker, env, timeout=3600, cwd=code or ROOT)
    heard = 0 if receiver == "none" else args.n  # every charge is new: one change each
    if result["rows"] != args.n or result["heard"] != heard:
        raise SystemExit(
            f"{vendor}/{receiver}: read {result['rows']} rows and heard {result['heard']} "
            f"changes, expected {args.n} and {heard}"
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="Receivers benchmark (see bench/README.md).")
    parser.add_argument("--n", type=int, default=3_000, help="charges on the gateway")
    parser.add_argument("--rounds", type=int, default=3, help="turns of every contender")
    parser.add_argument("--windows", type=int, help="windows read side by side")
    parser.add_argument("--reference", help="also run this commit's code (before)")
    parser.add_argument("--receivers", default="none,readme,noop")
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    args = parser.parse_args()
    receivers = args.receivers.split(",")
    if "none" not in receivers or args.rounds < 1:
        parser.error("--receivers must include none, and --rounds be at least 1")
    vendors = [] if args.postgres_only else ["sqlite"]
    vendors += [] if args.sqlite_only or not have_postgres() else ["postgres"]
    context = machine()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp, fake_server() as fake:
        dbs = Databases(Path(tmp))
        codes: dict[str, Path | None] = {"this": None}
        if args.reference:
            codes[args.reference] = code_at(args.reference, Path(tmp))
            if codes[args.reference] is None:
                raise SystemExit(f"cannot take {args.reference} out of git")
        fake.reseed(args.n)
        try:
            for vendor in vendors:
                rows += _vendor(dbs, fake, vendor, receivers, codes, args)
        finally:
            dbs.drop_all()
    title = f"Sync of {args.n:,} new charges with and without a receiver, no latency"
    title += f", median of {args.rounds} rounds (range)" if args.rounds > 1 else ""
    print(table(title, HEADERS, rows))
    print(f"\n{context}")


def _vendor(
    dbs: Databases,
    fake: Any,
    vendor: str,
    receivers: list[str],
    codes: dict[str, Path | None],
    args: Any,
) -> list[list[Any]]:
    """Every round on one database, then its table rows."""
    turns = [(name, receiver) for name in codes for receiver in receivers]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {turn: [] for turn in turns}
    for n in range(args.rounds):
        for name, receiver in turns[n % len(turns) :] + turns[: n % len(turns)]:
            runs[name, receiver].append(run(dbs, fake, vendor, receiver, codes[name], args))
    return _rows(vendor, runs)


def _rows(vendor: str, runs: dict[tuple[str, str], list[dict[str, Any]]]) -> list[list[Any]]:
    """A table row per code and receiver; each ratio to ``none`` within a round."""
    rows = []
    for name, receiver in runs:
        mine, none = runs[name, receiver], runs[name, "none"]
        rates = [_rate(r) for r in mine]
        ratios = [_rate(a) / _rate(b) for a, b in zip(mine, none, strict=True)]
        rows.append(
            [
                vendor,
                name,
                receiver,
                statistics.median(rates),
                _spread(rates, "{:,.0f}"),
                "-" if receiver == "none" else _ratio(ratios),
                _per_row(mine, "cpu"),
                _per_row(mine, "db_cpu"),
                _per_row(mine, "gateway_cpu"),
            ]
        )
    return rows


def _rate(result: dict[str, Any]) -> float:
    return float(result["rows"] / result["seconds"])


def _spread(values: list[float], fmt: str) -> str:
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}" if len(values) > 1 else ""


def _ratio(values: list[float]) -> str:
    middle = f"{statistics.median(values):.2f}x"
    return f"{middle} ({_spread(values, '{:.2f}x')})" if len(values) > 1 else middle


def _per_row(results: list[dict[str, Any]], key: str) -> str:
    """Median milliseconds of CPU a row (``-`` where not measured: SQLite has no server)."""
    values = [r[key] / r["rows"] * 1000 for r in results if r.get(key) is not None]
    return f"{statistics.median(values):.3f}" if values else "-"


if __name__ == "__main__":
    main()
