"""CSV export benchmark: the admin's streamed export, with refunds, against a floor.

    bench/run csv [--n 100000] [--small 10000] [--rounds 5] [--refunds 0,0.03,0.3]
                  [--reference COMMIT]

For each database (SQLite file; PostgreSQL when available) and each share of
refunded charges, a worker process fills a mirror with generated charges (the
admin benchmark's ``fill``) and refunds that share of them (:func:`refund_share`:
successful refunds, some pending ones, some refund requests whose outcome is
unknown), then exports every charge, the contenders taking turns over
``--rounds`` rounds:

- ours: ``GET /admin/django_paycharge/charge/export/`` through Django's test
  client, the streamed body read chunk by chunk as a client would;
- "values_list": what a shop writes by hand: the same 16 columns and the stored
  refunded total, ``values_list(...).iterator()`` into ``csv.writer``, streamed
  (no cell formatted, nothing neutralised, nothing left to refund): the floor on
  SQLite;
- on PostgreSQL, "COPY": ``COPY (SELECT <the same columns> ... ORDER BY <the
  changelist's order>) TO STDOUT (FORMAT csv, HEADER)``, read chunk by chunk
  through psycopg: the database's limit.

With ``--reference COMMIT`` the same worker runs again on that commit's
``django_paycharge`` (taken out of git), on the same mirror: "before" and
"after" from one run, each as ratios to the contenders of its own rounds.

Time is measured without tracing, with the client process's CPU (every
thread) and PostgreSQL's (every process of its cluster) beside it; each ratio
is the median of the rounds' own ratios, with their range. The statements
ours runs are counted once. Peak Python memory is measured with
``tracemalloc`` in a separate pass of each (tracing slows them alike): the
export must be flat in memory, its peak at N against its peak at the small N.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import (
    ROOT,
    Databases,
    bench_env,
    code_at,
    emit,
    have_postgres,
    machine,
    run_worker,
    table,
)

EXPORT_URL = "/admin/django_paycharge/charge/export/"
#: The exported columns of a charge (``export.COLUMNS``' fields), and its stored refunded total.
FIELDS = (
    "gateway_id",
    "account",
    "store_id",
    "status",
    "mode",
    "created_on",
    "payment_type",
    "requested_amount",
    "requested_currency",
    "charged_amount",
    "charged_currency",
    "fee_amount",
    "fee_currency",
    "merchant_transaction_id",
    "transaction_token_id",
    "metadata",
    "refunds_total",
)
ORDER = ("-created_on", "-id")


def ours(client: Any) -> int:
    """Bytes of the streamed export, read chunk by chunk."""
    response = client.get(EXPORT_URL)
    if response.status_code != 200 or not response.streaming:
        raise SystemExit(f"{EXPORT_URL} answered {response.status_code}")
    return sum(len(chunk) for chunk in response.streaming_content)


class _Count:
    """A file that counts what is written to it."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, text: str) -> None:
        self.size += len(text.encode())


def values_list(_client: Any) -> int:
    """Bytes of a hand-written export: ``values_list`` rows into ``csv.writer``, streamed."""
    from django_paycharge.models import Charge

    out = _Count()
    writer = csv.writer(out)
    writer.writerow(FIELDS)
    rows = Charge.objects.order_by(*ORDER).values_list(*FIELDS).iterator(chunk_size=2000)
    writer.writerows(rows)
    return out.size


def copy_stdout(_client: Any) -> int:
    """Bytes of ``COPY (...) TO STDOUT``: the same columns, in the changelist's order."""
    from django.db import connection

    from django_paycharge.models import Charge

    sql, params = Charge.objects.order_by(*ORDER).values(*FIELDS).query.sql_with_params()
    with (
        connection.cursor() as cursor,
        cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv, HEADER)", params) as copy,
    ):
        return sum(len(chunk) for chunk in copy)


def refund_share(share: float) -> None:
    """Refund ``share`` of all charges (successful ones, by id; more only, never fewer).

    Each gets a successful refund (half its amount; one in four the whole) and the
    request that made it; one in ten also a pending refund of a quarter, one in
    twenty a refund request whose outcome is unknown (its amount reserved).
    """
    from django.utils import timezone

    from django_paycharge.models import Charge, ChargeActionRequest, Refund
    from django_paycharge.services import recount_refunds_total

    now = timezone.now()
    target = round(share * Charge.objects.count())
    have = Charge.objects.filter(refunds__isnull=False).distinct().count()
    todo = (
        Charge.objects.filter(status="successful", refunds__isnull=True)
        .order_by("id")
        .values_list("pk", "charged_amount", "charged_currency", "mode", "created_on")[
            : max(0, target - have)
        ]
    )
    refunds: list[Any] = []
    requests: list[Any] = []

    def add(charge: tuple[Any, ...], amount: int, status: str | None) -> None:
        """A refund of ``status`` and its request (None: a request of unknown outcome)."""
        pk, _charged, currency, mode, created = charge
        refund = None
        if status is not None:
            refund = Refund(
                gateway_id=uuid.uuid4(),
                charge_id=pk,
                amount=amount,
                currency=currency,
                status=status,
                mode=mode,
                created_on=created,
                synced_at=now,
                first_seen_at=now,
            )
            refunds.append(refund)
        requests.append(
            ChargeActionRequest(
                kind="refund",
                idempotency_key=str(uuid.uuid4()),
                charge_id=pk,
                params={"amount": amount, "currency": currency},
                state="succeeded" if refund is not None else "unknown",
                refund=refund,
            )
        )

    for n, charge in enumerate(todo.iterator(), start=have):
        charged = charge[1] or 0
        add(charge, charged if n % 4 == 0 else charged // 2, "successful")
        if n % 10 == 1:
            add(charge, charged // 4, "pending")
        if n % 20 == 3:
            add(charge, charged // 10, None)
    Refund.objects.bulk_create(refunds, batch_size=5000)
    for request in requests:
        request.refund_id = request.refund.pk if request.refund is not None else None
    ChargeActionRequest.objects.bulk_create(requests, batch_size=5000)
    recount_refunds_total(Charge.objects.filter(refunds__isnull=False).distinct())


def _peak_mb(run: Callable[[Any], int], client: Any) -> float:
    tracemalloc.start()
    try:
        run(client)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def worker(total: int, rounds: int, share: float) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from bench._common import QueryCounter
    from bench._sync_limit import client_cpu, server_cpu
    from bench.admin_changelist import fill
    from django_paycharge.models import Charge

    fill(total)
    refund_share(share)
    user_model = get_user_model()
    user = user_model.objects.filter(username="bench").first() or (
        user_model.objects.create_superuser("bench", "bench@example.com", None)
    )
    client = Client()
    client.force_login(user)
    variants: dict[str, Callable[[Any], int]] = {"ours": ours, "values_list": values_list}
    if connection.vendor == "postgresql":
        variants["COPY"] = copy_stdout
    sizes = {name: run(client) for name, run in variants.items()}  # warm-up
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        ours(client)
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
            "refunded": Charge.objects.filter(refunds_total__gt=0).count(),
            "statements": counter.count,
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


FLOORS = ("COPY", "values_list")


def _ratio(seconds: list[float], floor: list[float] | None) -> str:
    """The median of the rounds' own ratios to a floor, with their range."""
    if not floor:
        return ""
    ratios = [a / b for a, b in zip(seconds, floor, strict=True)]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}x-{max(ratios):.2f}x)"


def _rows(
    vendor: str, share: float, code: str, small: dict[str, Any], large: dict[str, Any]
) -> list[list[Any]]:
    rows: list[list[Any]] = []
    n = large["rows"]
    for name in large["seconds"]:
        if code == "before" and name != "ours":
            continue  # the floors are the same code: shown once, with "after"
        seconds = large["seconds"][name]
        peak = name != "COPY"  # COPY's memory is the server's and psycopg's
        ratios = [_ratio(seconds, large["seconds"].get(floor)) for floor in FLOORS]
        rows.append(
            [
                vendor,
                f"{share:.0%} ({large['refunded']:,})",
                name if name != "ours" else f"ours, {code}",
                _spread(seconds),
                *ratios,
                _per_row(large["cpu"][name], n),
                _per_row(large["db_cpu"][name], n),
                large["statements"] if name == "ours" else "",
                f"{small['peak_mb'][name]:.1f}" if peak else "-",
                f"{large['peak_mb'][name]:.1f}" if peak else "-",
                f"{large['peak_mb'][name] / small['peak_mb'][name]:.2f}" if peak else "-",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="CSV export benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="the N to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--refunds", default="0,0.03,0.3", help="shares of refunded charges, comma-separated"
    )
    parser.add_argument("--reference", help="commit of the code to compare with (before)")
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--share", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.rounds, args.share)
        return
    vendors = [] if args.postgres_only else ["sqlite"]
    vendors += [] if args.sqlite_only or not have_postgres() else ["postgres"]
    shares = sorted(float(share) for share in args.refunds.split(","))
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp))
        codes: dict[str, Path | None] = {}
        if args.reference:
            codes["before"] = code_at(args.reference, Path(tmp))
        codes["after"] = None
        try:
            for vendor in vendors:
                # One mirror a size, refunded more at each share, exported by each code.
                mirrors = {
                    n: dbs.fresh(vendor, f"paycharge_bench_csv_{n}") for n in (args.small, args.n)
                }
                for share in shares:
                    for code, tree in codes.items():
                        flags = ["--rounds", str(args.rounds), "--share", str(share)]
                        small, large = (
                            run_worker(
                                "bench.csv_export",
                                ["--worker", str(n), *flags],
                                bench_env(vendor, mirrors[n], tree),
                                3600,
                                cwd=tree or ROOT,
                            )
                            for n in (args.small, args.n)
                        )
                        rows += _rows(vendor, share, code, small, large)
        finally:
            dbs.drop_all()
    print(
        table(
            f"Admin CSV export of every charge: {args.n:,} rows ({args.rounds} rounds, turns)",
            [
                "database",
                "refunded",
                "export",
                "seconds: median (range)",
                "/ COPY",
                "/ values_list",
                "client CPU µs/row",
                "DB CPU µs/row",
                "statements",
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
