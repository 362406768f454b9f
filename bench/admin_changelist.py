"""Admin benchmark: the charge changelist at 1,000 and 100,000 charges.

    bench/run admin [--n 100000] [--renders 7] [--pages SUBSTRING,...] [--reference COMMIT]
                    [--rounds R]

For each database (SQLite file; PostgreSQL when available) a worker process
fills a fresh mirror with generated charges (``bulk_create``; no gateway
needed; a refund on one successful charge in twenty, whole or half, with
the charge's ``refunds_total`` as ``store_refund`` keeps it), logs a
superuser in through Django's test client and renders the changelist without
a filter, with every filter (each choice that selects a different share of
the table), every date choice and range, each kind of search, a few filters
combined, and on a deep page: SQL statements per page (must not grow with N)
and the median (p50) render time of ``--renders`` renders after one warm-up,
with the median CPU time of the process that renders (Django and, on SQLite,
the database too; PostgreSQL's own CPU is not in it): where the wall time is
far above it, the host's load took the difference. ``--pages`` keeps the
pages whose names contain one of the given substrings (while iterating).
``--reference`` also renders the pages at ``--n`` on the code of that commit
(taken out of git, its own fresh mirror), right after ours: the "before" of
the same run. ``--rounds`` repeats the renders at ``--n``, ours and the
reference's in turn: the p50s are medians of the rounds', and each page's
after / before is the median of the rounds' own ratios, with their range.
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
    code_at,
    emit,
    have_postgres,
    machine,
    median,
    run_worker,
    table,
)

STORES = [str(uuid.UUID(int=0x5_0000 + n)) for n in range(3)]


def _variants(sample: dict[str, str], pages: int) -> list[tuple[str, str]]:
    """Every filter, search and range of the changelist (and a few of them combined)."""
    today = date.today()
    tomorrow = today + timedelta(days=1)

    def since(start: date) -> str:
        return f"created_on__gte={start}&created_on__lt={tomorrow}"

    month_ago = today - timedelta(days=30)
    week = f"created_from={month_ago}&created_to={month_ago + timedelta(days=6)}"
    past_week = since(today - timedelta(days=7))
    return [
        ("no filter", ""),
        ("status", "status__exact=successful"),
        ("status: rare", "status__exact=error"),
        ("mode", "mode__exact=test"),
        ("currency", "currency=JPY"),
        ("currency: a fifth", "currency=USD"),
        ("store", f"store={STORES[1]}"),
        ("account", "account=default"),
        ("account: a tenth", "account=second"),
        ("payment type", "payment_type__exact=card"),
        ("refunds: refunded", "refunds=refunded"),
        ("refunds: partially", "refunds=partially_refunded"),
        ("refunds: none", "refunds=none"),
        ("created: today", since(today)),
        ("created: past 7 days", past_week),
        ("created: this month", since(today.replace(day=1))),
        ("created: this year", since(today.replace(month=1, day=1))),
        ("created: no date", "created_on__isnull=True"),
        ("created between (a week)", week),
        ("created from (open-ended)", f"created_from={month_ago}"),
        ("amount between", "amount_min=1000&amount_max=2000"),
        ("amount from (open-ended)", "amount_min=99000"),
        ("search: charge id", f"q={sample['id']}"),
        ("search: id's first 8", f"q={sample['id'][:8]}"),
        ("search: merchant transaction id", f"q={sample['mtid']}"),
        ("search: transaction token id", f"q={sample['token']}"),
        ("search: no match", "q=no-such-order"),
        ("status + mode + currency", "status__exact=successful&mode__exact=live&currency=USD"),
        ("refunded + past 7 days", f"refunds=partially_refunded&{past_week}"),
        ("store + amount between", f"store={STORES[2]}&amount_min=5000&amount_max=6000"),
        ("page 20 (or the last)", f"p={min(20, pages)}"),
    ]  # fmt: skip


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
                merchant_transaction_id=f"order-{n}" if n % 3 else None,
                transaction_token_id=uuid.UUID(int=rng.getrandbits(128), version=4),
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


def refund(after: int = 0, every: int = 20, *, whole: bool = True) -> None:
    """A successful refund of one successful charge in ``every`` (of those past the first
    ``after``, by id): half the amount, or with ``whole`` the whole of every other one."""
    from django.utils import timezone

    from django_paycharge.models import Charge, Refund

    now = timezone.now()
    successful = (
        Charge.objects.filter(status="successful")
        .order_by("id")[after:]
        .values_list("pk", "charged_amount", "charged_currency", "mode", "created_on")
    )
    refunds = [
        Refund(
            gateway_id=uuid.uuid4(),
            charge_id=pk,
            amount=amount if whole and n % (2 * every) == 0 else (amount or 0) // 2,
            currency=currency,
            status="successful",
            mode=mode,
            created_on=created,
            synced_at=now,
            first_seen_at=now,
        )
        for n, (pk, amount, currency, mode, created) in enumerate(successful.iterator())
        if n % every == 0
    ]
    Refund.objects.bulk_create(refunds, batch_size=5000)
    if any(field.name == "refunds_total" for field in Charge._meta.fields):  # not in --reference
        # What ``store_refund`` keeps on each charge (bulk_create bypasses it).
        from django_paycharge.services import recount_refunds_total

        refunded = Refund.objects.filter(status="successful").values("charge_id")
        recount_refunds_total(Charge.objects.filter(pk__in=refunded))


def measure(
    renders: int, variants: int | None = None, pages: list[str] | None = None
) -> list[dict[str, Any]]:
    """Queries, median render time and CPU of each changelist variant (the first
    ``variants``, those named with one of ``pages``)."""
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
    first = Charge.objects.exclude(merchant_transaction_id=None).order_by("id")[0]
    sample = {
        "id": str(first.gateway_id),
        "mtid": str(first.merchant_transaction_id),
        "token": str(first.transaction_token_id),
    }
    results = []
    last_page = max(1, -(-Charge.objects.count() // 50))
    chosen = _variants(sample, last_page)[:variants]
    for name, query in [(n, q) for n, q in chosen if not pages or any(p in n for p in pages)]:
        url = "/admin/django_paycharge/charge/" + (f"?{query}" if query else "")
        answer = client.get(url)  # warm-up
        if answer.status_code != 200:
            raise SystemExit(f"{url} answered {answer.status_code}")
        counter = QueryCounter()
        times, cpu = [], []
        for _ in range(renders):
            counter.count = 0
            started, started_cpu = time.perf_counter(), time.process_time()
            with connection.execute_wrapper(counter):
                client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        results.append(
            {"variant": name, "queries": counter.count, "ms": median(times), "cpu": median(cpu)}
        )
    return results


def worker(total: int, renders: int, pages: list[str]) -> None:
    import django

    django.setup()
    from django_paycharge.models import Charge

    started = time.perf_counter()
    refunded_before = Charge.objects.filter(status="successful").count()
    fill(total)
    refund(after=refunded_before)  # the new successful charges' refunds
    filled = time.perf_counter() - started
    if os.environ.get("BENCH_DB") == "postgres":
        from django.db import connection

        with connection.cursor() as cursor:
            # As autovacuum would after a bulk load and the refunds' updates: statistics, and
            # the visibility map that lets a count read an index alone.
            cursor.execute("VACUUM ANALYZE")
    emit({"results": measure(renders, pages=pages), "fill_seconds": filled})


def _at_n(
    args: argparse.Namespace, vendor: str, dbs: Databases, code: Path | None
) -> tuple[list[Any], list[Any]]:
    """Each page at ``--n``: ``--rounds`` workers of ours and of the reference, in turn.

    Each mirror is filled by its first worker only (a worker adds the charges missing).
    """
    module = "bench.admin_changelist"
    worker_args = ["--worker", str(args.n), "--renders", str(args.renders), "--pages", args.pages]
    ours_env = bench_env(vendor, dbs.fresh(vendor, "paycharge_bench_admin"))
    reference_env = None
    if code is not None:
        reference_db = dbs.fresh(vendor, "paycharge_bench_admin_reference", code)
        reference_env = bench_env(vendor, reference_db, code)
    ours, reference = [], []
    for _ in range(args.rounds):
        ours.append(run_worker(module, worker_args, ours_env, 1800)["results"])
        if reference_env is not None and code is not None:
            reference.append(
                run_worker(module, worker_args, reference_env, 1800, cwd=code)["results"]
            )
    return ours, reference


def _ratio(ours: list[Any], reference: list[Any], page: int) -> str:
    """The median of the rounds' own ratios (ours / the reference's p50), with their range."""
    ratios = [o[page]["ms"] / r[page]["ms"] for o, r in zip(ours, reference, strict=True)]
    return f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description="Admin changelist benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="the N to compare with")
    parser.add_argument("--renders", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=1, help="workers at --n, in turn")
    parser.add_argument("--pages", default="", help="only pages naming one of these (a,b)")
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    parser.add_argument("--reference", help="also render at --n on the code of this commit")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.renders, [p for p in args.pages.split(",") if p])
        return
    vendors = [] if args.postgres_only else ["sqlite"]
    vendors += [] if args.sqlite_only or not have_postgres() else ["postgres"]
    context = machine()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp))
        code = code_at(args.reference, Path(tmp)) if args.reference else None
        if args.reference and code is None:
            raise SystemExit(f"--reference {args.reference}: not found in git")
        try:
            for vendor in vendors:
                db = dbs.fresh(vendor, "paycharge_bench_admin_small")
                options = ["--renders", str(args.renders), "--pages", args.pages]
                small = run_worker(
                    "bench.admin_changelist",
                    ["--worker", str(args.small), *options],
                    bench_env(vendor, db),
                    900,
                )["results"]
                ours, reference = _at_n(args, vendor, dbs, code)
                for page, a in enumerate(small):
                    large = [r[page] for r in ours]
                    rows.append([vendor, a["variant"], a["queries"]])
                    rows[-1] += [max(r["queries"] for r in large), a["ms"]]
                    rows[-1] += [median([r["ms"] for r in large]), a["cpu"]]
                    rows[-1] += [median([r["cpu"] for r in large])]
                    if reference:
                        before = [r[page] for r in reference]
                        rows[-1] += [median([r["ms"] for r in before])]
                        rows[-1] += [median([r["cpu"] for r in before])]
                        rows[-1] += [_ratio(ours, reference, page)]
        finally:
            dbs.drop_all()
    before_columns = (
        [f"p50 ms before ({args.reference})", "CPU ms before", "after / before (p50)"]
        if code
        else []
    )
    print(
        table(
            f"Admin charge changelist (50 rows a page): {args.small:,} vs {args.n:,} charges"
            + (f", {args.rounds} rounds at {args.n:,}" if args.rounds > 1 else ""),
            [
                "database",
                "page",
                f"queries at {args.small:,}",
                f"queries at {args.n:,}",
                f"p50 ms at {args.small:,}",
                f"p50 ms at {args.n:,}",
                f"CPU ms at {args.small:,}",
                f"CPU ms at {args.n:,}",
                *before_columns,
            ],
            rows,
        )
    )
    print(f"\n{context}")


if __name__ == "__main__":
    main()
