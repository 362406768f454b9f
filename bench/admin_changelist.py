"""Admin benchmark: the charge changelist at 1,000 and 100,000 charges.

    bench/run admin [--n 100000] [--renders 7]

For each database (SQLite file; PostgreSQL when available) a worker process
fills a fresh mirror with generated charges (``bulk_create``; no gateway
needed), logs a superuser in through Django's test client and renders the
changelist without a filter, with each filter, with a search and on a deep
page: SQL statements per page (must not grow with N) and the median render
time of ``--renders`` renders after one warm-up.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
import uuid
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from bench._common import (
    Databases,
    bench_env,
    emit,
    have_postgres,
    machine,
    median,
    run_worker,
    table,
)

STORES = [str(uuid.UUID(int=0x5_0000 + n)) for n in range(3)]


def _variants(sample_id: str, pages: int) -> list[tuple[str, str]]:
    today = date.today()
    week = f"created_on__gte={today - timedelta(days=7)}&created_on__lt={today + timedelta(days=1)}"
    return [
        ("no filter", ""),
        ("status", "status__exact=successful"),
        ("mode", "mode__exact=test"),
        ("currency", "currency=JPY"),
        ("store", f"store={STORES[1]}"),
        ("account", "account=default"),
        ("payment type", "payment_type__exact=card"),
        ("created: past 7 days", week),
        ("search by id", f"q={sample_id}"),
        ("page 20 (or the last)", f"p={min(20, pages)}"),
    ]


def fill(total: int) -> None:
    """Add generated charges until the mirror holds ``total``."""
    from django.utils import timezone

    from django_paycharge.client.vocabulary import status_rank
    from django_paycharge.models import Charge

    have = Charge.objects.count()
    rng = random.Random(have)
    now = timezone.now()
    statuses = ["successful"] * 6 + ["failed", "canceled", "awaiting", "authorized", "pending"]
    batch: list[Charge] = []
    for n in range(have, total):
        status = rng.choice(statuses)
        amount = rng.randrange(100, 100_000)
        batch.append(
            Charge(
                gateway_id=uuid.UUID(int=rng.getrandbits(128), version=4),
                account="default" if n % 10 else "second",
                store_id=uuid.UUID(STORES[n % 3]),
                transaction_token_type="one_time",
                payment_type=rng.choice(["card", "card", "konbini", "online", "bank_transfer"]),
                requested_amount=amount,
                requested_currency="JPY" if n % 5 else "USD",
                charged_amount=amount if status == "successful" else None,
                charged_currency="JPY" if status == "successful" else None,
                status=status,
                status_rank=status_rank(status),
                mode="test" if n % 4 else "live",
                metadata={"order_id": f"order-{n}"},
                created_on=now - timedelta(seconds=rng.randrange(90 * 86400)),
                store_name="Store",
                raw={},
                synced_at=now,
                first_seen_at=now,
            )
        )
        if len(batch) == 5000:
            Charge.objects.bulk_create(batch)
            batch = []
    if batch:
        Charge.objects.bulk_create(batch)


def measure(renders: int, variants: int | None = None) -> list[dict[str, Any]]:
    """Queries and median render time of each changelist variant (the first ``variants``)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from bench._common import QueryCounter
    from django_paycharge.models import Charge

    user_model = get_user_model()
    user = user_model.objects.filter(username="bench").first() or (
        user_model.objects.create_superuser("bench", "bench@example.com", None)
    )
    client = Client()
    client.force_login(user)
    sample = str(Charge.objects.order_by("id").values_list("gateway_id", flat=True)[0])
    results = []
    pages = max(1, -(-Charge.objects.count() // 50))
    for name, query in _variants(sample, pages)[:variants]:
        url = "/admin/django_paycharge/charge/" + (f"?{query}" if query else "")
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
        results.append({"variant": name, "queries": counter.count, "ms": median(times)})
    return results


def worker(total: int, renders: int) -> None:
    import django

    django.setup()
    started = time.perf_counter()
    fill(total)
    filled = time.perf_counter() - started
    if os.environ.get("BENCH_DB") == "postgres":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would after a bulk load
    emit({"results": measure(renders), "fill_seconds": filled})


def main() -> None:
    parser = argparse.ArgumentParser(description="Admin changelist benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="the N to compare with")
    parser.add_argument("--renders", type=int, default=7)
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
                db = dbs.fresh(vendor, "paycharge_bench_admin")
                env = bench_env(vendor, db)
                module = "bench.admin_changelist"
                small = run_worker(
                    module, ["--worker", str(args.small), "--renders", str(args.renders)], env, 900
                )
                large = run_worker(
                    module, ["--worker", str(args.n), "--renders", str(args.renders)], env, 1800
                )
                for a, b in zip(small["results"], large["results"], strict=True):
                    rows.append(
                        [vendor, a["variant"], a["queries"], b["queries"], a["ms"], b["ms"]]
                    )
        finally:
            dbs.drop_all()
    print(
        table(
            f"Admin charge changelist (50 rows a page): {args.small:,} vs {args.n:,} charges",
            [
                "database",
                "page",
                f"queries at {args.small:,}",
                f"queries at {args.n:,}",
                f"median ms at {args.small:,}",
                f"median ms at {args.n:,}",
            ],
            rows,
        )
    )
    print(f"\n{context}")


if __name__ == "__main__":
    main()
