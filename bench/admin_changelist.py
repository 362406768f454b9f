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
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
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
    migrate,
    percentile,
    pg_connect,
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
    this_year = since(today.replace(month=1, day=1))
    everything = f"created_from={today - timedelta(days=365)}&created_to={today}"
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
        # The id prefix with a range over the whole table: the prefix must be read first.
        ("search: id's first 8 + created between (all)", f"q={sample['id'][:8]}&{everything}"),
        ("search: charge id + created: this year", f"q={sample['id']}&{this_year}"),
        ("search: merchant transaction id + past 7 days", f"q={sample['mtid']}&{past_week}"),
    ]  # fmt: skip


#: The other changelists, each under its own name: (list, page, query).
def _other_variants(sample: dict[str, str], pages: int) -> list[tuple[str, str, str]]:
    today = date.today()

    def past_week(field: str) -> str:
        return f"{field}__gte={today - timedelta(days=7)}&{field}__lt={today + timedelta(days=1)}"

    return [
        ("refund", "no filter", ""),
        ("refund", "status", "status__exact=successful"),
        ("refund", "mode", "mode__exact=live"),
        ("refund", "account", "account=second"),
        ("refund", "created: past 7 days", past_week("created_on")),
        ("refund", "search: refund id", f"q={sample['refund']}"),
        ("refund", "search: charge id", f"q={sample['id']}"),
        ("cancel", "no filter", ""),
        ("chargeactionrequest", "no filter", ""),
        ("chargeactionrequest", "state", "state__exact=succeeded"),
        ("chargeactionrequest", "outcome unknown", "outcome=unknown"),
        ("chargeactionrequest", "kind", "kind__exact=capture"),
        ("chargerequest", "no filter", ""),
        ("chargerequest", "state", "state__exact=succeeded"),
        ("chargerequest", "outcome unknown", "outcome=unknown"),
        ("chargerequest", "account", "account=second"),
        ("chargerequest", "created: past 7 days", past_week("created_at")),
        ("subscription", "no filter", ""),
        ("subscription", "status", "status__exact=current"),
        ("subscription", "mode", "mode__exact=live"),
        ("subscription", "currency", "currency__exact=USD"),
        ("subscription", "account", "account=second"),
        ("subscription", "period", "period__exact=monthly"),
        ("subscription", "search: id's first 8", f"q={sample['subscription'][:8]}"),
        ("subscription", "page 20 (or the last)", f"p={min(20, max(1, pages // 10))}"),
        ("webhookdelivery", "no filter", ""),
        ("webhookdelivery", "event", "event=charge_finished"),
        ("webhookdelivery", "status: failed", "status__exact=failed"),
        ("webhookdelivery", "status: stuck", "status__exact=stuck"),
        ("webhookdelivery", "received: past 7 days", past_week("received_at")),
        ("announcement", "no filter", ""),
        ("announcement", "status: not heard", "status__exact=not_heard"),
        ("announcement", "signal", "signal=refund_created"),
        ("announcement", "created: past 7 days", past_week("created_at")),
        ("announcement", "search: event id", f"q={sample['event']}"),
        ("quarantineditem", "no filter", ""),
        ("ownerproblem", "no filter", ""),
        ("synccheckpoint", "no filter", ""),
        ("webhookconfiguration", "no filter", ""),
    ]  # fmt: skip


def pages_of(sample: dict[str, str], last_page: int) -> list[tuple[str, str]]:
    """Every page the benchmark renders: (name, URL). The charge list's pages keep their
    names; the other lists' are named after their model."""
    base = "/admin/django_paycharge/"
    charges = [
        (name, f"{base}charge/" + (f"?{query}" if query else ""))
        for name, query in _variants(sample, last_page)
    ]
    others = [
        (f"{model} list: {name}", f"{base}{model}/" + (f"?{query}" if query else ""))
        for model, name, query in _other_variants(sample, last_page)
    ]
    return charges + others


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
        .values_list("pk", "charged_amount", "charged_currency", "mode", "account", "created_on")
    )
    refunds = [
        Refund(
            gateway_id=uuid.uuid4(),
            charge_id=pk,
            amount=amount if whole and n % (2 * every) == 0 else (amount or 0) // 2,
            currency=currency,
            status="successful",
            mode=mode,
            account=account,
            created_on=created,
            synced_at=now,
            first_seen_at=now,
        )
        for n, (pk, amount, currency, mode, account, created) in enumerate(successful.iterator())
        if n % every == 0
    ]
    Refund.objects.bulk_create(refunds, batch_size=5000)
    if any(field.name == "refunds_total" for field in Charge._meta.fields):  # not in --reference
        # What ``store_refund`` keeps on each charge (bulk_create bypasses it).
        from django_paycharge.services import recount_refunds_total

        refunded = Refund.objects.filter(status="successful").values("charge_id")
        recount_refunds_total(Charge.objects.filter(pk__in=refunded))


def fill_others(total: int) -> None:
    """The other lists' rows, in proportion to ``total`` charges (a table already filled is
    left alone): a charge request for every other charge, a capture and a refund request a
    refund, a cancel a hundred charges, a subscription ten, and a webhook delivery and an
    announcement a charge; a few quarantined items, owner problems and checkpoints."""
    from django.db.models import OuterRef, Subquery
    from django.utils import timezone

    from django_paycharge.models import (
        Announcement,
        Cancel,
        Charge,
        ChargeActionRequest,
        ChargeRequest,
        OwnerProblem,
        QuarantinedItem,
        Refund,
        Subscription,
        SyncCheckpoint,
        WebhookConfiguration,
        WebhookDelivery,
    )

    now = timezone.now()
    rng = random.Random(total)
    charges = Charge.objects.order_by("id").values_list("pk", "gateway_id", "account", "created_on")

    def each(step: int) -> Any:
        return (row for n, row in enumerate(charges.iterator(chunk_size=5000)) if n % step == 0)

    states = ["succeeded"] * 17 + ["failed", "not_sent", "unknown"]
    if not ChargeRequest.objects.exists():
        ChargeRequest.objects.bulk_create(
            (
                ChargeRequest(caller_key=f"order-{pk}", account=account, params={"amount": 1000},
                              state=rng.choice(states), charge_id=pk, attempts=1, sent_at=created)
                for pk, _gid, account, created in each(2)
            ),
            batch_size=5000,
        )  # fmt: skip
        # auto_now_add wrote the load's time: each request when its charge was created.
        created_on = Charge.objects.filter(pk=OuterRef("charge_id")).values("created_on")
        ChargeRequest.objects.update(created_at=Subquery(created_on))
    if not ChargeActionRequest.objects.exists():
        refunds = Refund.objects.values_list("pk", "charge_id", "charge__account", "amount")
        ChargeActionRequest.objects.bulk_create(
            (
                ChargeActionRequest(kind=kind, idempotency_key=f"{kind}-{pk}", account=account,
                                    charge_id=charge, params={"amount": amount},
                                    state=rng.choice(states), attempts=1, requested_by="staff",
                                    refund_id=pk if kind == "refund" else None)
                for pk, charge, account, amount in refunds.iterator(chunk_size=5000)
                for kind in ("capture", "refund")
            ),
            batch_size=5000,
        )  # fmt: skip
    if not Cancel.objects.exists():
        Cancel.objects.bulk_create(
            (
                Cancel(gateway_id=uuid.UUID(int=rng.getrandbits(128), version=4), charge_id=pk,
                       status="successful", mode="test", account=account, created_on=created,
                       synced_at=now, first_seen_at=now)
                for pk, _gid, account, created in each(100)
            ),
            batch_size=5000,
        )  # fmt: skip
    if not Subscription.objects.exists():
        statuses = ["current"] * 6 + ["unpaid", "suspended", "canceled", "completed"]
        Subscription.objects.bulk_create(
            (
                Subscription(gateway_id=uuid.UUID(int=rng.getrandbits(128), version=4),
                             account="default" if n % 10 else "second",
                             store_id=uuid.UUID(STORES[n % 3]),
                             transaction_token_id=uuid.UUID(int=rng.getrandbits(128), version=4),
                             mode="test" if n % 4 else "live", status=rng.choice(statuses),
                             amount=rng.randrange(100, 10_000), currency="JPY" if n % 5 else "USD",
                             period=rng.choice(["monthly", "monthly", "weekly", "annually"]),
                             next_payment_date=(now + timedelta(days=rng.randrange(60))).date(),
                             created_on=now - timedelta(seconds=rng.randrange(90 * 86400)),
                             raw={}, synced_at=now, first_seen_at=now)
                for n in range(total // 10)
            ),
            batch_size=5000,
        )  # fmt: skip
    if not WebhookDelivery.objects.exists():
        # Failed now and then; claimed by a worker that died (stuck) once in a thousand.
        deliveries = ["processed"] * 49 + ["failed"]
        events = ["charge_finished", "charge_updated"]
        WebhookDelivery.objects.bulk_create(
            (
                WebhookDelivery(account=account, event=rng.choice(events),
                                delivery_id=str(gid), dedupe_key=str(gid),
                                body=f'{{"data": {{"id": "{gid}"}}}}', headers={},
                                received_at=created, attempts=1,
                                status="processing" if pk % 1000 == 0 else rng.choice(deliveries),
                                processed_at=created, charge_id=pk)
                for pk, gid, account, created in each(1)
            ),
            batch_size=5000,
        )  # fmt: skip
    if not Announcement.objects.exists():
        heard = ["heard"] * 98 + ["not_heard", "waiting"]
        signals = ["charge_status_changed", "charge_status_changed", "refund_created"]
        Announcement.objects.bulk_create(
            (
                Announcement(event_id=uuid.UUID(int=rng.getrandbits(128), version=4),
                             signal=rng.choice(signals),
                             receiver="shop.receivers.on_charge", sender="django_paycharge.charge",
                             arguments={"charge": {"model": "django_paycharge.charge", "pk": pk}},
                             created_at=created, status=rng.choice(heard), attempts=1)
                for pk, _gid, _account, created in each(1)
            ),
            batch_size=5000,
        )  # fmt: skip
    if not QuarantinedItem.objects.exists():
        QuarantinedItem.objects.bulk_create(
            QuarantinedItem(account="default", resource="charge", payload=f'{{"n": {n}}}',
                            payload_digest=f"{n:064x}", reason="unreadable amount",
                            first_seen_at=now, last_seen_at=now)
            for n in range(100)
        )  # fmt: skip
    if not OwnerProblem.objects.exists():
        OwnerProblem.objects.bulk_create(
            OwnerProblem(
                account=account, kind="credentials", count=3, first_seen_at=now, last_seen_at=now
            )
            for account in ("default", "second")
        )
    if not SyncCheckpoint.objects.exists():
        SyncCheckpoint.objects.bulk_create(
            SyncCheckpoint(account=account, store_key=store, resource=resource,
                           high_water=now, last_completed_at=now)
            for account in ("default", "second")
            for store in STORES
            for resource in ("charges", "webhooks")
        )  # fmt: skip
    if not WebhookConfiguration.objects.exists():
        WebhookConfiguration.objects.bulk_create(
            WebhookConfiguration(gateway_id=uuid.UUID(int=n + 1), store_id=uuid.UUID(store),
                                 account="default" if n else "second",
                                 url=f"https://shop.example/payments/webhook/{n}/",
                                 triggers=["charge_finished"], active=True, synced_at=now)
            for n, store in enumerate(STORES)
        )  # fmt: skip


class _SqlClock:
    """Counts SQL statements run through Django's connection and adds up their time."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any
    ) -> Any:
        self.count += 1
        started = time.perf_counter()
        try:
            return execute(sql, params, many, ctx)
        finally:
            self.seconds += time.perf_counter() - started


def _sample() -> dict[str, str]:
    """Ids the searches look for: the first charge's with a merchant transaction id, and the
    first refund's, subscription's and announcement's (a made-up id where there is none)."""
    from django_paycharge.models import Announcement, Charge, Refund, Subscription

    nothing = str(uuid.UUID(int=1))
    first = Charge.objects.exclude(merchant_transaction_id=None).order_by("id")[0]
    refund = Refund.objects.order_by("id").values_list("gateway_id", flat=True).first()
    subscription = Subscription.objects.order_by("id").values_list("gateway_id", flat=True).first()
    event = Announcement.objects.order_by("id").values_list("event_id", flat=True).first()
    return {
        "id": str(first.gateway_id),
        "mtid": str(first.merchant_transaction_id),
        "token": str(first.transaction_token_id),
        "refund": str(refund or nothing),
        "subscription": str(subscription or nothing),
        "event": str(event or nothing),
    }


def measure(
    renders: int, variants: int | None = None, pages: list[str] | None = None
) -> list[dict[str, Any]]:
    """Queries, p50 and p90 render time, SQL time and CPU of each changelist page (the first
    ``variants``, those named with one of ``pages``)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from django_paycharge.models import Charge

    user_model = get_user_model()
    user = user_model.objects.filter(username="bench").first() or (
        user_model.objects.create_superuser("bench", "bench@example.com", None)
    )
    client = Client()
    client.force_login(user)
    results = []
    last_page = max(1, -(-Charge.objects.count() // 50))
    chosen = pages_of(_sample(), last_page)[:variants]
    for name, url in [(n, u) for n, u in chosen if not pages or any(p in n for p in pages)]:
        answer = client.get(url)  # warm-up
        if answer.status_code != 200:
            raise SystemExit(f"{url} answered {answer.status_code}")
        times, cpu, sql = [], [], []
        for _ in range(renders):
            clock = _SqlClock()
            started, started_cpu = time.perf_counter(), time.process_time()
            with connection.execute_wrapper(clock):
                client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
            sql.append(clock.seconds * 1000)
        results.append(
            {
                "variant": name,
                "url": url,
                "queries": clock.count,
                "ms": median(times),
                "p90": percentile(times, 90),
                "sql": median(sql),
                "cpu": median(cpu),
            }
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
    fill_others(total)
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
    ours_env = bench_env(vendor, _mirror(args, vendor, dbs, "admin", None), BENCH_ACCOUNTS="2")
    reference_env = None
    if code is not None:
        reference_db = _mirror(args, vendor, dbs, "admin_reference", code)
        reference_env = bench_env(vendor, reference_db, code, BENCH_ACCOUNTS="2")
    ours, reference = [], []
    for _ in range(args.rounds):
        ours.append(run_worker(module, worker_args, ours_env, 1800)["results"])
        if reference_env is not None and code is not None:
            reference.append(
                run_worker(module, worker_args, reference_env, 1800, cwd=code)["results"]
            )
    return ours, reference


def _mirror(
    args: argparse.Namespace, vendor: str, dbs: Databases, name: str, code: Path | None
) -> str:
    """The database of one mirror at ``--n``: fresh, or with ``--keep DIR`` the one kept there
    (SQLite: a file in DIR; PostgreSQL: a database not dropped at the end), filled by an
    earlier run and migrated again by this code (filling 100,000 charges and their other rows
    takes minutes)."""
    if not args.keep:
        return dbs.fresh(vendor, f"paycharge_bench_{name}", code)
    tag = f"{name}_{args.n}" + (f"_{code.name}" if code else "")
    if vendor == "sqlite":
        kept = Path(args.keep) / f"{tag}.sqlite3"
        if not kept.exists():
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(dbs.fresh(vendor, f"paycharge_bench_{name}", code), kept)
        migrate(vendor, str(kept), code)
        return str(kept)
    database = f"paycharge_kept_{tag}"
    with pg_connect() as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not found:
            conn.execute(f'CREATE DATABASE "{database}"')
    migrate(vendor, database, code)
    return database


def _ratio(ours: list[Any], reference: list[Any], page: int) -> str:
    """The median of the rounds' own ratios (ours / the reference's p50), with their range."""
    ratios = [o[page]["ms"] / r[page]["ms"] for o, r in zip(ours, reference, strict=True)]
    return f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description="Admin changelist benchmark.")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="the N to compare with (0: none)")
    parser.add_argument("--renders", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=1, help="workers at --n, in turn")
    parser.add_argument("--pages", default="", help="only pages naming one of these (a,b)")
    parser.add_argument("--keep", help="keep the mirrors at --n in this folder, and reuse them")
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
    slow: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp))
        code = code_at(args.reference, Path(tmp)) if args.reference else None
        if args.reference and code is None:
            raise SystemExit(f"--reference {args.reference}: not found in git")
        try:
            for vendor in vendors:
                small: list[Any] = []
                if args.small:
                    db = dbs.fresh(vendor, "paycharge_bench_admin_small")
                    options = ["--renders", str(args.renders), "--pages", args.pages]
                    small = run_worker(
                        "bench.admin_changelist",
                        ["--worker", str(args.small), *options],
                        bench_env(vendor, db, BENCH_ACCOUNTS="2"),
                        900,
                    )["results"]
                ours, reference = _at_n(args, vendor, dbs, code)
                for page, first in enumerate(ours[0]):
                    a = small[page] if small else None
                    large = [r[page] for r in ours]
                    p50 = median([r["ms"] for r in large])
                    rows.append([vendor, first["variant"], a["queries"] if a else "-"])
                    rows[-1] += [max(r["queries"] for r in large), a["ms"] if a else "-"]
                    rows[-1] += [p50, median([r["p90"] for r in large])]
                    rows[-1] += [median([r["sql"] for r in large])]
                    rows[-1] += [median([r["cpu"] for r in large])]
                    if p50 >= 100:
                        slow.append(f"{vendor}: {first['variant']} ({p50:.0f} ms, {first['url']})")
                    if reference:
                        before = [r[page] for r in reference]
                        rows[-1] += [median([r["ms"] for r in before])]
                        rows[-1] += [median([r["sql"] for r in before])]
                        rows[-1] += [_ratio(ours, reference, page)]
        finally:
            dbs.drop_all()
    before_columns = (
        [f"p50 ms before ({args.reference})", "SQL ms before", "after / before (p50)"]
        if code
        else []
    )
    print(
        table(
            f"Admin changelists (50 rows a page): {args.small:,} vs {args.n:,} charges"
            + (f", {args.rounds} rounds at {args.n:,}" if args.rounds > 1 else ""),
            [
                "database",
                "page",
                f"queries at {args.small:,}",
                f"queries at {args.n:,}",
                f"p50 ms at {args.small:,}",
                f"p50 ms at {args.n:,}",
                f"p90 ms at {args.n:,}",
                f"SQL ms at {args.n:,}",
                f"CPU ms at {args.n:,}",
                *before_columns,
            ],
            rows,
        )
    )
    print(f"\nPages at or over 100 ms (p50) at {args.n:,}: {len(slow)} of {len(rows)}")
    for line in slow:
        print(f"- {line}")
    print(f"\n{context}")


if __name__ == "__main__":
    main()
