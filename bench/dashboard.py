"""Dashboard benchmark: the staff dashboard at 1,000 and 100,000 charges.

    bench/run dashboard [--n 100000] [--small 1000] [--renders 15]

For each database (SQLite file; PostgreSQL when available) a worker process
fills a fresh mirror with the admin benchmark's generated charges (90 days,
mixed statuses, payment types, currencies and modes), gives the failed ones an
error code and a refund to one successful charge in twenty, logs a superuser
in through Django's test client and renders ``/admin/django_paycharge/dashboard/``
for test charges (three quarters of them) and live ones: SQL statements per
render (they must not grow with N) and the median and 95th percentile of
``--renders`` renders after one warm-up. The target of issue 34: p50 at most
200 ms at 100,000 charges.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import (
    Databases,
    QueryCounter,
    bench_env,
    emit,
    have_postgres,
    machine,
    median,
    percentile,
    run_worker,
    table,
)
from bench.admin_changelist import fill, refund

URL = "/admin/django_paycharge/dashboard/"


def dress(every: int = 20) -> None:
    """Error codes on the failed charges, a refund of half on one successful charge in ``every``."""
    from django_paycharge.models import Charge, Refund

    Charge.objects.filter(status="failed", error__isnull=True).update(error={"code": 306})
    if not Refund.objects.exists():
        refund(every=every, whole=False)


def measure(renders: int) -> list[dict[str, Any]]:
    """Queries, median and p95 render time of the dashboard, for test and live charges."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    user_model = get_user_model()
    user = user_model.objects.filter(username="bench").first() or (
        user_model.objects.create_superuser("bench", "bench@example.com", None)
    )
    client = Client()
    client.force_login(user)
    results = []
    for mode in ("test", "live"):
        url = f"{URL}?mode={mode}"
        answer = client.get(url)  # warm-up
        if answer.status_code != 200:
            raise SystemExit(f"{url} answered {answer.status_code}")
        counter = QueryCounter()
        times = []
        for _ in range(renders):
            counter.count = 0
            started = time.perf_counter()
            with connection.execute_wrapper(counter):
                client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        results.append(
            {
                "mode": mode,
                "queries": counter.count,
                "p50": median(times),
                "p95": percentile(times, 95),
            }
        )
    return results


def worker(total: int, renders: int) -> None:
    import django

    django.setup()
    from django_paycharge.models import Charge

    fill(total)
    dress()
    if os.environ.get("BENCH_DB") == "postgres":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would after a bulk load
    emit({"results": measure(renders), "charges": Charge.objects.count()})


def main() -> None:
    parser = argparse.ArgumentParser(description="Dashboard benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="the N to compare with")
    parser.add_argument("--renders", type=int, default=15)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.renders)
        return
    vendors = ["sqlite"] + ([] if args.sqlite_only or not have_postgres() else ["postgres"])
    context = machine()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp))
        try:
            for vendor in vendors:
                db = dbs.fresh(vendor, "paycharge_bench_dashboard")
                env = bench_env(vendor, db)
                module = "bench.dashboard"
                answers = [
                    run_worker(
                        module, ["--worker", str(n), "--renders", str(args.renders)], env, 1800
                    )
                    for n in (args.small, args.n)
                ]
                small, large = (a["results"] for a in answers)
                for a, b in zip(small, large, strict=True):
                    rows.append(
                        [
                            vendor,
                            a["mode"],
                            a["queries"],
                            b["queries"],
                            a["p50"],
                            b["p50"],
                            b["p95"],
                        ]
                    )
        finally:
            dbs.drop_all()
    print(
        table(
            f"Staff dashboard: {args.small:,} vs {args.n:,} charges, {args.renders} renders",
            [
                "database",
                "charges shown",
                f"queries at {args.small:,}",
                f"queries at {args.n:,}",
                f"p50 ms at {args.small:,}",
                f"p50 ms at {args.n:,}",
                f"p95 ms at {args.n:,}",
            ],
            rows,
        )
    )
    print(f"\n{context}")


if __name__ == "__main__":
    main()
