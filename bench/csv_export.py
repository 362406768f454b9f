"""CSV export benchmark: the admin's streamed export at 10,000 and 100,000 charges.

    bench/run csv [--n 100000] [--small 10000] [--rounds 5]

For each database (SQLite file; PostgreSQL when available) a worker process
fills a fresh mirror with generated charges (the admin benchmark's ``fill``)
and exports every charge, taking turns over ``--rounds`` rounds:

- ours: ``GET /admin/django_paycharge/charge/export/`` through Django's test
  client, the streamed body read chunk by chunk as a client would;
- baseline: what a shop writes by hand: the same rows read into a list and
  the whole CSV built in memory before it is answered.

Time is measured without tracing; peak Python memory with ``tracemalloc`` in
a separate pass of each (tracing slows both alike). The export must be
constant in memory: its peak at N is compared with its peak at the small N.
"""

from __future__ import annotations

import argparse
import csv
import io
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
    client = Client()
    client.force_login(user)
    variants = {"ours": ours, "baseline": baseline}
    sizes = {name: run(client) for name, run in variants.items()}  # warm-up
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):  # taking turns, so that drift hits both alike
        for name, run in variants.items():
            started = time.perf_counter()
            run(client)
            times[name].append(time.perf_counter() - started)
    peaks = {name: _peak_mb(run, client) for name, run in variants.items()}
    emit({"rows": total, "bytes": sizes, "seconds": times, "peak_mb": peaks})


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    middle = ordered[len(ordered) // 2]
    return f"{middle:.2f} ({ordered[0]:.2f}-{ordered[-1]:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description="CSV export benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="the N to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.rounds)
        return
    vendors = ["sqlite"] + ([] if args.sqlite_only or not have_postgres() else ["postgres"])
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
                for name in ("ours", "baseline"):
                    rows.append(
                        [
                            vendor,
                            name,
                            f"{large['bytes'][name] / 2**20:.1f}",
                            _spread(large["seconds"][name]),
                            f"{small['peak_mb'][name]:.1f}",
                            f"{large['peak_mb'][name]:.1f}",
                            f"{large['peak_mb'][name] / small['peak_mb'][name]:.2f}",
                        ]
                    )
                ratio = large["peak_mb"]["ours"] / large["peak_mb"]["baseline"]
                rows.append([vendor, "ours / baseline peak", "", "", "", f"{ratio:.3f}", ""])
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
