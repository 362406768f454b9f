"""The sync's fair contender: a plain sync, as a shop's engineer would write it, on the clock.

    python -m bench._sync_fair [--windows W] [--limit N]

It does the work a row that ours does, and nothing ours does for its guarantees:

- ``requests`` and ``json.loads`` (``parse_float=Decimal``: the gateway's amounts
  are exact) for every list page;
- every mirrored column, the canonical ``raw`` and its digest, by the sync's own
  conversion (``json_row``: the same work a row, so the two mirrors come out
  byte for byte the same, which ``bench.sync_fair`` checks);
- one write a page, the database's fastest (``bench._sync_limit.page_writer``: a
  ``COPY`` and one guarded upsert on PostgreSQL, one ``executemany`` on SQLite);
- with ``--windows W`` (8: what the issue's contender read), the range of
  creation times (the first charge of the oldest page and of the newest) cut into
  W equal windows, each read page after page by a thread of its own, which
  writes its pages on its own connection (on SQLite the windows take turns at
  the one writer, as every SQLite writer must).

Left out, what ours pays for: checkpoints, the run's lock, quarantine of odd
charges, stale-read guards beyond the upsert's, announcements, retries.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
from datetime import datetime
from decimal import Decimal
from typing import Any

import django


def fair(limit: int, windows: int) -> dict[str, Any]:
    import requests
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from bench._sync_limit import (
        client_cpu,
        gateway_cpu,
        mirror_digest,
        page_writer,
        server_cpu,
        spent,
    )
    from django_paycharge.services.mirror.rows import json_row

    conf = settings.PAYCHARGE
    url = f"{conf['BASE_URL']}/stores/{conf['STORE_ID']}/charges"
    auth = {"Authorization": f"Bearer {conf['SECRET']}.{conf['JWT']}"}
    # SQLite has one writer at a time: its windows take turns (PostgreSQL's write side by side).
    one_writer = threading.Lock() if connection.vendor == "sqlite" else contextlib.nullcontext()
    counted = threading.Lock()
    totals = {"rows": 0, "statements": 0, "pages": 0}
    failures: list[BaseException] = []

    def read(session: requests.Session, params: dict[str, str]) -> dict[str, Any]:
        answer = session.get(url, params={"limit": "100", **params}, headers=auth, timeout=60)
        answer.raise_for_status()
        page: dict[str, Any] = json.loads(answer.content, parse_float=Decimal)
        return page

    def reader(bounds: dict[str, str]) -> None:
        """One window, page after page, each page written by this thread on its connection."""
        session, cursor = requests.Session(), None
        try:
            connection.ensure_connection()
            encode, write = page_writer(connection)
            while True:
                params = {**bounds, "cursor_direction": "asc"}
                page = read(session, params if cursor is None else {**params, "cursor": cursor})
                now, items = timezone.now(), page["items"]
                values = encode([json_row(item, "default", "", now, exact=True) for item in items])
                with one_writer:
                    statements = write(values) if values else 0
                with counted:
                    totals["rows"] += len(items)
                    totals["statements"] += statements
                    totals["pages"] += 1
                if not page["has_more"] or not items:
                    return
                cursor = items[-1]["id"]
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()  # this thread's

    cpu, db_cpu, gateway = client_cpu(), server_cpu(), gateway_cpu()
    started = time.perf_counter()
    threads = [threading.Thread(target=reader, args=(b,)) for b in _windows(read, windows)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    cpu = client_cpu() - cpu
    if failures:
        raise failures[0]
    return {
        "rows": totals["rows"],
        "seconds": seconds,
        "queries": totals["statements"],
        "pages": totals["pages"],
        "counts": {"created": totals["rows"]},
        "cpu": cpu,
        "db_cpu": spent(db_cpu, server_cpu()),
        "gateway_cpu": spent(gateway, gateway_cpu()),
        "mirror": mirror_digest(),
    }


def _windows(read: Any, count: int) -> list[dict[str, str]]:
    """``from``/``to`` of ``count`` equal windows of creation time (``from`` inclusive,
    ``to`` exclusive: every charge in exactly one), the first and last open-ended."""
    if count <= 1:
        return [{}]
    import requests

    with requests.Session() as session:
        first = read(session, {"cursor_direction": "asc"})["items"]
        last = read(session, {"cursor_direction": "desc"})["items"]
    if not first:
        return [{}]
    low = datetime.fromisoformat(first[0]["created_on"])
    high = datetime.fromisoformat(last[0]["created_on"])
    cuts = [(low + (high - low) * n / count).isoformat() for n in range(1, count)]
    bounds: list[dict[str, str]] = []
    for n in range(count):
        window = {"from": cuts[n - 1]} if n else {}
        bounds.append({**window, "to": cuts[n]} if n < count - 1 else window)
    return bounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=10**9, help="rows expected")
    parser.add_argument("--windows", type=int, default=1, help="windows read side by side")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    django.setup()
    from bench._common import emit

    emit(fair(args.limit, args.windows))


if __name__ == "__main__":
    main()
