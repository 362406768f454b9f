"""The contenders of the sync benchmark, each run in its own process by ``bench.sync``.

    python -m bench._sync_workers ours|baseline|copy --n N

Settings come from the environment (see ``bench.settings``); the answer is one
JSON line: rows, seconds, queries, pages, counts and peak RSS.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from typing import Any

import django


def ours(limit: int) -> dict[str, Any]:
    """``services.sync_charges(full=True)``, what ``paycharge_sync --charges --full`` runs."""
    from django.db import connection

    from bench._common import QueryCounter
    from django_paycharge import services

    counter = QueryCounter()
    started = time.perf_counter()
    with connection.execute_wrapper(counter):
        result = services.sync_charges(full=True)
    seconds = time.perf_counter() - started
    return {
        "rows": result.seen,
        "seconds": seconds,
        "queries": counter.count,
        "pages": result.pages,
        "counts": result.as_dict(),
    }


def baseline(limit: int) -> dict[str, Any]:
    """What a shop writes by hand: the SDK's list pages + ``update_or_create`` per charge."""
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone
    from univapayclientsdk.http.auth.oauth_2 import BearerAuthCredentials
    from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

    from bench._common import QueryCounter
    from django_paycharge.models import Charge, status_rank

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


_COPY_COLUMNS = (
    "gateway_id", "account", "payment_type", "store_id", "transaction_token_id",
    "transaction_token_type", "subscription_id", "merchant_transaction_id", "requested_amount",
    "requested_currency", "requested_amount_formatted", "charged_amount", "charged_currency",
    "charged_amount_formatted", "fee_amount", "fee_currency", "fee_amount_formatted",
    "only_direct_currency", "capture_at", "descriptor", "descriptor_phone_number", "status",
    "error", "metadata", "mode", "created_on", "redirect", "merchant_name", "store_name",
    "three_ds", "status_rank", "raw", "raw_digest", "synced_at", "first_seen_at",
)  # fmt: skip
_JSON = frozenset({"error", "metadata", "redirect", "three_ds", "raw"})
_NOT_NULL_TEXT = frozenset({"transaction_token_type", "requested_currency", "mode"})


def copy_limit(limit: int) -> dict[str, Any]:
    """The machine's limit: pages already in memory, COPY into a temp table + one upsert.

    Only the database work is timed (per 100-row page, one transaction each,
    the same guarded ``ON CONFLICT ... WHERE`` as ours): the ceiling a sync
    that also reads and parses pages can approach.
    """
    import psycopg
    import requests
    from django.conf import settings
    from django.utils import timezone

    from django_paycharge.models import status_rank

    conf = settings.PAYCHARGE
    session = requests.Session()
    session.trust_env = False
    headers = {"Authorization": f"Bearer {conf['SECRET']}.{conf['JWT']}"}
    pages: list[list[tuple[Any, ...]]] = []
    cursor = None
    now = timezone.now().isoformat()
    total = 0
    while total < limit:
        params = {"limit": "100", "cursor_direction": "asc"} | (
            {"cursor": cursor} if cursor else {}
        )
        body = session.get(
            f"{conf['BASE_URL']}/stores/{conf['STORE_ID']}/charges", params=params, headers=headers
        ).json()
        items = body["items"]
        pages.append([_copy_row(item, now, status_rank) for item in items])
        total += len(items)
        if not body["has_more"] or not items:
            break
        cursor = items[-1]["id"]
    db = settings.DATABASES["default"]
    conn = psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=False
    )
    cols = ", ".join(_COPY_COLUMNS)
    update = ", ".join(
        f"{c} = EXCLUDED.{c}"
        for c in _COPY_COLUMNS
        if c not in ("gateway_id", "account", "first_seen_at")
    )
    with conn.cursor() as cur:
        # Only the mirrored columns (no identity, no constraints); emptied at each commit.
        cur.execute(
            f"CREATE TEMP TABLE bench_in ON COMMIT DELETE ROWS AS "
            f"SELECT {cols} FROM django_paycharge_charge WITH NO DATA"
        )
        conn.commit()
        queries = 0
        started = time.perf_counter()
        for rows in pages:
            with cur.copy(f"COPY bench_in ({cols}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cur.execute(
                f"INSERT INTO django_paycharge_charge ({cols}) SELECT {cols} FROM bench_in "
                f"ON CONFLICT (gateway_id) DO UPDATE SET {update} "
                "WHERE django_paycharge_charge.status_rank <= EXCLUDED.status_rank"
            )
            conn.commit()
            queries += 2
        seconds = time.perf_counter() - started
    conn.close()
    return {
        "rows": total,
        "seconds": seconds,
        "queries": queries,
        "pages": len(pages),
        "counts": {},
    }


def _copy_row(item: dict[str, Any], now: str, rank: Any) -> tuple[Any, ...]:
    text = json.dumps(item, sort_keys=True, separators=(",", ":"))
    values = {
        **{c: item.get(c) for c in _COPY_COLUMNS},
        "gateway_id": item["id"],
        "account": "default",
        "payment_type": "",
        "only_direct_currency": bool(item.get("only_direct_currency")),
        "status_rank": rank(item.get("status") or ""),
        "raw": item,
        "raw_digest": hashlib.blake2b(text.encode(), digest_size=16).hexdigest(),
        "synced_at": now,
        "first_seen_at": now,
    }
    if values["metadata"] is None:
        values["metadata"] = {}
    for name in _NOT_NULL_TEXT:
        values[name] = values[name] or ""
    return tuple(
        json.dumps(values[c]) if c in _JSON and values[c] is not None else values[c]
        for c in _COPY_COLUMNS
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("contender", choices=["ours", "baseline", "copy"])
    parser.add_argument("--limit", type=int, default=10**9, help="stop after this many rows")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    django.setup()
    from bench._common import emit

    run = {"ours": ours, "baseline": baseline, "copy": copy_limit}[args.contender]
    emit(run(args.limit))


if __name__ == "__main__":
    main()
