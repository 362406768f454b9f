"""CSV export benchmark: the admin's streamed export at 10,000 and 100,000 charges.

    bench/run csv [--n 100000] [--small 10000] [--rounds 5]

For each database (SQLite file; PostgreSQL when available) a worker process
fills a fresh mirror with generated charges (the admin benchmark's ``fill``)
and exports every charge, taking turns over ``--rounds`` rounds:

- ours: ``GET /admin/django_paycharge/charge/export/`` through Django's test
  client, the streamed body read chunk by chunk as a client would;
- baseline: what a shop writes by hand: the same rows read into a list and
  the whole CSV built in memory before it is answered;
- on PostgreSQL, the database's limit: ``COPY (SELECT <the exported fields>
  ... ORDER BY <the changelist's order>) TO STDOUT (FORMAT csv, HEADER)``,
  read chunk by chunk through psycopg: the same rows as text, with no cell
  formatted in Python; and "COPY + refunds", the same with each charge's
  refunded total (its stored column) and refund activity (a subquery), what
  the export's refund cells are read from.

Time is measured without tracing, with the client process's CPU (every
thread) and PostgreSQL's (every process of its cluster) beside it; "ours /
COPY" is the median of the rounds' own ratios, with their range. Peak Python
memory is measured with ``tracemalloc`` in a separate pass of each (tracing
slows them alike). The export must be constant in memory: its peak at N is
compared with its peak at the small N.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import Databases, bench_env, emit, have_postgres, machine, run_worker, table

EXPORT_URL = "/admin/django_paycharge/charge/export/"


def ours(client: Any) -> int:
    """Bytes of the streamed export, read chunk by chunk."""
    response = client.get(EXPORT_URL)
    if response.status_code != 200 or not response.streaming:
        raise SystemExit(f"{EXPORT_URL} answered {response.status_code}")
    return sum(len(chunk) for chunk in response.streaming_content)


def baseline(_client: Any) -> int:
    """Bytes of a hand-written export: every row in a list, the whole file in memory."""
    from django.http import HttpResponse

    from django_paycharge.admin import export
    from django_paycharge.models import Charge

    fields = [field for _name, field in export.COLUMNS]
    rows = list(Charge.objects.order_by("-created_on", "-id").values(*fields))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(export.header())
    for values in rows:
        writer.writerow(export.row(values))
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    return len(response.content)


def copy_stdout(_client: Any, refunds: bool = False) -> int:
    """Bytes of ``COPY (...) TO STDOUT``: the exported fields, in the changelist's order
    (``refunds``: and each charge's refunded total and refund activity, as the export reads
    them)."""
    from django.db import connection

    from django_paycharge.admin import export
    from django_paycharge.models import Charge

    fields = [field for _name, field in export.COLUMNS]
    query = Charge.objects.order_by("-created_on", "-id")
    if refunds:
        query = export._with_refunds(query)
        fields += [export._REFUNDED, export._ACTIVITY]
    sql, params = query.values(*fields).query.sql_with_params()
    with (
        connection.cursor() as cursor,
        cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv, HEADER)", params) as copy,
    ):
        return sum(len(chunk) for chunk in copy)


def _peak_mb(run: Callable[[Any], int], client: Any) -> float:
    tracemalloc.start()
    try:
        run(client)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def worker(total: int, rounds: int) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from bench.admin_changelist import fill

    fill(total)
    user_model = get_user_model()
    user = user_model.objects.filter(username="bench").first() or (
        user_model.objects.create_superuser("bench", "bench@example.com", None)
    )
    from django.db import connection

    from bench._sync_limit import client_cpu, server_cpu

    client = Client()
    client.force_login(user)
    variants = {"ours": ours, "baseline": baseline}
    if connection.vendor == "postgresql":
        variants["COPY"] = copy_stdout
        variants["COPY + refunds"] = functools.partial(copy_stdout, refunds=True)
    sizes = {name: run(client) for name, run in variants.items()}  # warm-up
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    db_cpu: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for n in range(rounds):  # taking turns, first place moving, so that drift hits all alike
        for name in names[n % len(names) :] + names[: n % len(names)]:
            before, db_before = client_cpu(), server_cpu()
            started = time.perf_counter()
            variants[name](client)
            times[name].append(time.perf_counter() - started)
            cpu[name].append(client_cpu() - before)
            db_after = server_cpu()
            if db_before is not None and db_after is not None:
                db_cpu[name].append(db_after - db_before)
    peaks = {name: _peak_mb(run, client) for name, run in variants.items()}
    emit(
        {
            "rows": total,
            "bytes": sizes,
            "seconds": times,
            "cpu": cpu,
            "db_cpu": db_cpu,
            "peak_mb": peaks,
        }
    )


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    middle = ordered[len(ordered) // 2]
    return f"{middle:.2f} ({ordered[0]:.2f}-{ordered[-1]:.2f})"


def _per_row(values: list[float], rows: int) -> str:
    """Median microseconds of CPU a row, or ``-`` where not measured."""
    return f"{statistics.median(values) / rows * 1e6:.1f}" if values else "-"


COPIES = ("COPY", "COPY + refunds")


def _ratio(seconds: list[float], copy: list[float] | None) -> str:
    """The median of the rounds' own ratios to a COPY contender, with their range."""
    if not copy:
        return ""
    ratios = [a / b for a, b in zip(seconds, copy, strict=True)]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}x-{max(ratios):.2f}x)"


def _rows(vendor: str, small: dict[str, Any], large: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    n = large["rows"]
    for name in large["seconds"]:
        seconds = large["seconds"][name]
        peak = not name.startswith("COPY")  # COPY's memory is the server's and psycopg's
        ratios = [_ratio(seconds, large["seconds"].get(copy)) for copy in COPIES]
        rows.append(
            [
                vendor,
                name,
                f"{large['bytes'][name] / 2**20:.1f}",
                _spread(seconds),
                *ratios,
                _per_row(large["cpu"][name], n),
                _per_row(large["db_cpu"][name], n),
                f"{small['peak_mb'][name]:.1f}" if peak else "-",
                f"{large['peak_mb'][name]:.1f}" if peak else "-",
                f"{large['peak_mb'][name] / small['peak_mb'][name]:.2f}" if peak else "-",
            ]
        )
    ratio = large["peak_mb"]["ours"] / large["peak_mb"]["baseline"]
    rows.append([vendor, "ours / baseline peak", "", "", "", "", "", "", "", f"{ratio:.3f}", ""])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="CSV export benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="the N to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.rounds)
        return
    vendors = [] if args.postgres_only else ["sqlite"]
    vendors += [] if args.sqlite_only or not have_postgres() else ["postgres"]
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp))
        try:
            for vendor in vendors:
                db = dbs.fresh(vendor, "paycharge_bench_csv")
                env = bench_env(vendor, db)
                results = [
                    run_worker(
                        "bench.csv_export",
                        ["--worker", str(n), "--rounds", str(args.rounds)],
                        env,
                        1800,
                    )
                    for n in (args.small, args.n)
                ]
                small, large = results
                rows += _rows(vendor, small, large)
        finally:
            dbs.drop_all()
    print(
        table(
            f"Admin CSV export of every charge: {args.n:,} rows ({args.rounds} rounds, turns)",
            [
                "database",
                "export",
                "MB of CSV",
                "seconds: median (range)",
                "/ COPY",
                "/ COPY + refunds",
                "client CPU µs/row",
                "DB CPU µs/row",
                f"peak MB at {args.small:,}",
                f"peak MB at {args.n:,}",
                "peak growth",
            ],
            rows,
        )
    )
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
