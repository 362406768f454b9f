"""200 checkouts on a default-settings shop while webhooks are written: no customer sees an error.

The example shop runs as two ``runserver`` processes on one database, against
the fake gateway's HTTP server. On the SQLite pass the database has Django's
default settings (no busy time-out option, deferred transactions: what a new
shop has, and what check W003 warns about): every write that meets another
must wait or be run again, never reach the customer as a 500.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import requests
from django.db import connection

from tests.pg_databases import new_postgres_database

from .shop_stack import Customer, start_stack

CHECKOUTS = 200
CUSTOMERS = 4


def _checkouts(stack: Any, count: int) -> tuple[Counter[str], list[str]]:
    outcomes: Counter[str] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    todo = iter(range(count))

    def customer_loop() -> None:
        while True:
            with lock:
                n = next(todo, None)
            if n is None:
                return
            customer = Customer(stack, stack.shop_urls[n % len(stack.shop_urls)])
            try:
                order = customer.place_order()
                answer = customer.pay(order, customer.token())
                where = answer.headers.get("Location", "")
                ok = answer.status_code == 302 and f"/orders/{order}/" in where
                result = "paid" if ok else f"pay answered {answer.status_code}"
            except (AssertionError, requests.RequestException) as exc:
                result = f"{type(exc).__name__}: {str(exc)[:200]}"
            with lock:
                outcomes[result] += 1
                if result != "paid":
                    errors.append(result)

    threads = [threading.Thread(target=customer_loop) for _ in range(CUSTOMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes, errors


def test_200_checkouts_with_webhooks_meanwhile_answer_no_error(
    tmp_path: Path, reliability_record: Any
) -> None:
    sqlite = connection.vendor == "sqlite"
    url = f"sqlite:///{tmp_path / 'shop.sqlite3'}" if sqlite else new_postgres_database("shop_load")
    stack = start_stack(tmp_path, url, shops=2)
    try:
        if sqlite:  # the shop really runs on Django's defaults: W003 says so
            assert "django_paycharge.W003" in stack.manage("check")
        # Each webhook twice: more writers at the same moments as the checkouts.
        requests.post(stack.gateway_url + "/_fake/delivery_options", json={"repeat": 2}, timeout=10)
        outcomes, errors = _checkouts(stack, CHECKOUTS)
        deliveries = stack.deliveries()
        answers = [a["status"] for d in deliveries for a in d["attempts"]]
        webhook_5xx = sum(1 for status in answers if status is not None and status >= 500)
        # No answer within the gateway's time-out: redelivered by it, never lost.
        late = sum(1 for status in answers if status is None)
        remote = stack.remote_charges()
        per_order = Counter(str((c.get("metadata") or {}).get("order")) for c in remote)
        paid, unprocessed = stack.query(
            "import json; from shop.models import Order; "
            "from django_paycharge.models import WebhookDelivery as D; "
            "print(json.dumps([Order.objects.filter(status='paid').count(), "
            "D.objects.exclude(status__in=['processed', 'ignored']).count()]))"
        )
    finally:
        stack.stop()
    assert deliveries, "no webhook was delivered: the test proved nothing about them"
    damage = {
        "errors": len(errors),
        "webhook_5xx": webhook_5xx,
        "duplicate_charges": sum(n - 1 for n in per_order.values() if n > 1),
        "orders_not_paid": CHECKOUTS - paid,
    }
    reliability_record(
        "200 checkouts on a default-settings shop",
        "example shop, 2 runserver processes on one database"
        + (
            " with Django's default SQLite settings (no busy time-out, deferred transactions)"
            if sqlite
            else ""
        )
        + f", {CUSTOMERS} customers at once, every webhook delivered twice meanwhile; "
        "fake gateway over HTTP",
        CHECKOUTS,
        damage,
        note=f"{len(deliveries)} webhook deliveries, {late} answered after the gateway's "
        f"time-out (redelivered), {unprocessed} stored but left for paycharge_process_webhooks"
        + (f"; outcomes {dict(outcomes)}" if errors else ""),
    )
