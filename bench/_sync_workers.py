"""The contenders of the sync benchmark, each run in its own process by ``bench.sync``.

    python -m bench._sync_workers ours|baseline|limit [--limit N] [--windows W]

Settings come from the environment (see ``bench.settings``); the answer is one
JSON line: rows, seconds, queries, pages, counts and peak RSS; ``ours`` and
``limit`` (the database's limit, :mod:`bench._sync_limit`) add the client's and
PostgreSQL's CPU seconds and a digest of the mirror they wrote. ``ours`` is
also today's code, the reference, when ``bench.sync`` puts that code first on
``PYTHONPATH``: it only calls ``services.sync_charges(full=True)``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import django


def ours(limit: int, windows: int | None = None) -> dict[str, Any]:
    """``services.sync_charges(full=True)``, what ``paycharge_sync --charges --full`` runs.

    Statements are counted on this thread's connection only (the readers of
    other windows have their own).
    """
    from django.db import connection

    from bench._common import QueryCounter
    from bench._sync_limit import client_cpu, gateway_cpu, mirror_digest, server_cpu
    from django_paycharge import services

    counter = QueryCounter()
    # Only when asked: today's code (the reference) may predate the argument.
    options: dict[str, Any] = {} if windows is None else {"windows": windows}
    cpu, db_cpu, gateway = client_cpu(), server_cpu(), gateway_cpu()
    started = time.perf_counter()
    with connection.execute_wrapper(counter):
        result = services.sync_charges(full=True, **options)
    seconds = time.perf_counter() - started
    cpu = client_cpu() - cpu
    after = server_cpu()
    gateway_after = gateway_cpu()
    return {
        "rows": result.seen,
        "seconds": seconds,
        "queries": counter.count,
        "pages": result.pages,
        "counts": result.as_dict(),
        "cpu": cpu,
        "db_cpu": None if db_cpu is None or after is None else after - db_cpu,
        "gateway_cpu": None
        if gateway is None or gateway_after is None
        else gateway_after - gateway,
        "mirror": mirror_digest(),
    }


def baseline(limit: int) -> dict[str, Any]:
    """What a shop writes by hand: the SDK's list pages + ``update_or_create`` per charge."""
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone
    from univapayclientsdk.http.auth.oauth_2 import BearerAuthCredentials
    from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

    from bench._common import QueryCounter
    from django_paycharge.client.vocabulary import status_rank
    from django_paycharge.models import Charge

    conf = settings.PAYCHARGE
    sdk = UnivapayClientSdkClient(
        base_url=conf["BASE_URL"],
        bearer_auth_credentials=BearerAuthCredentials(conf["SECRET"], conf["JWT"]),
    )
    counter = QueryCounter()
    rows = pages = created = 0
    cursor = None
    started = time.perf_counter()
    with connection.execute_wrapper(counter):
        while rows < limit:
            page = sdk.charges.list_store_charges(
                conf["STORE_ID"], limit=100, cursor=cursor, cursor_direction="asc"
            ).body
            pages += 1
            for item in page.items:
                now = timezone.now()
                defaults = {
                    "store_id": item.store_id,
                    "transaction_token_id": item.transaction_token_id,
                    "transaction_token_type": item.transaction_token_type or "",
                    "merchant_transaction_id": item.merchant_transaction_id,
                    "requested_amount": item.requested_amount,
                    "requested_currency": item.requested_currency or "",
                    "requested_amount_formatted": item.requested_amount_formatted,
                    "charged_amount": item.charged_amount,
                    "charged_currency": item.charged_currency,
                    "charged_amount_formatted": item.charged_amount_formatted,
                    "fee_amount": item.fee_amount,
                    "fee_currency": item.fee_currency,
                    "fee_amount_formatted": item.fee_amount_formatted,
                    "only_direct_currency": bool(item.only_direct_currency),
                    "status": item.status,
                    "status_rank": status_rank(item.status or ""),
                    "error": _sdk_json(item.error),
                    "metadata": _sdk_json(item.metadata) or {},
                    "mode": item.mode or "",
                    "created_on": item.created_on.datetime,
                    "synced_at": now,
                }
                _, was_created = Charge.objects.update_or_create(
                    gateway_id=item.id,
                    defaults=defaults,
                    create_defaults={**defaults, "first_seen_at": now},
                )
                created += was_created
                rows += 1
            if not page.has_more or not page.items:
                break
            cursor = page.items[-1].id
    seconds = time.perf_counter() - started
    return {
        "rows": rows,
        "seconds": seconds,
        "queries": counter.count,
        "pages": pages,
        "counts": {"created": created, "updated": rows - created},
    }


def _sdk_json(value: Any) -> Any:
    if value is None:
        return None
    from univapayclientsdk.api_helper import APIHelper

    return APIHelper.to_dictionary(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("contender", choices=["ours", "baseline", "limit"])
    parser.add_argument("--limit", type=int, default=10**9, help="stop after this many rows")
    parser.add_argument("--windows", type=int, help="ours: windows read side by side")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    django.setup()
    from bench._common import emit

    if args.contender == "ours":
        emit(ours(args.limit, args.windows))
    elif args.contender == "limit":
        from bench._sync_limit import limit

        emit(limit(args.limit))
    else:
        emit(baseline(args.limit))


if __name__ == "__main__":
    main()
