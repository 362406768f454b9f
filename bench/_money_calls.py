"""The worker of ``bench/run client``'s money-moving calls: create, capture, refund.

    python -m bench._money_calls --calls 200 --rounds 5   (BENCH_DB, BENCH_GATEWAY_URL set)

One Django process (the benchmark project's settings, SQLite or PostgreSQL)
times, against the fake gateway's HTTP server, each call three ways, the
contenders taking turns in each round (the order reversed every other round):

- ``raw requests``: ``requests.Session().post(...)`` with an ``Idempotency-Key``
  header, then ``json.loads``: what a shop's hand-written call stands on;
- ``PayChargeClient``: our client alone (checked arguments, typed result), no
  database;
- the service: ``create_charge`` with the caller's key (as the docs advise)
  and without one, ``capture_charge``, ``refund_charge``: the request row
  committed before the call, the answer classified and stored;
- for a create, the fair floor of the checkout (``plain: POST + two writes``):
  what a shop writes by hand for the same guarantee, as plainly as it would: its
  own attempt row (``bench.floor.PlainPayment``) created and committed before
  the raw POST, its key the Idempotency-Key, then the answer written to it.

``BENCH_REQUEST_BOUNDARIES=1`` closes the database connections around every call
as Django does around every request (``close_old_connections``): with
``BENCH_CONN_MAX_AGE=0``, Django's default, each call opens a connection.

Charges to capture (authorized) and to refund (successful) are made off the
clock, each contender its own; the service's are read once more off the clock,
so that its mirror knows them as a webhook would have told it before any staff
action. Reported per contender: calls/s, client CPU
ms per call (this process), PostgreSQL CPU ms per call (its processes, from
/proc), and the ratio of its rate to raw requests' in the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import requests

from bench._common import emit, median

Call = Callable[[int], Any]
#: The checkout's fair floor (a create's only).
FLOOR = "plain: POST + two writes"
TOKEN_AUTH = "Bearer {secret}.{jwt}"


def setup() -> tuple[str, dict[str, str], str]:
    """Django, the gateway's base URL, the raw call's headers and a card token's id."""
    import django

    django.setup()
    from django_paycharge.testing import TEST_JWT, TEST_SECRET

    base = os.environ["BENCH_GATEWAY_URL"]
    headers = {"Authorization": TOKEN_AUTH.format(secret=TEST_SECRET, jwt=TEST_JWT)}
    card = {"cardholder": "TARO YAMADA", "card_number": "4242424242424242", "exp_month": 12,
            "exp_year": 2099, "cvv": "123"}  # fmt: skip
    made = requests.post(
        f"{base}/_fake/tokens",
        json={"payment_type": "card", "type": "recurring", "email": "a@example.com", "data": card},
        timeout=10,
    )
    made.raise_for_status()
    token = str(made.json()["id"])
    return base, headers, token


def contenders(
    op: str, base: str, headers: dict[str, str], token: str, count: int
) -> dict[str, tuple[Callable[[], list[Any]], Call]]:
    """For ``op``: each contender's (off-the-clock preparation of ``count`` calls, the call)."""
    from django_paycharge import services
    from django_paycharge.client import PayChargeClient
    from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID

    session = requests.Session()
    client = PayChargeClient(base_url=base, secret=TEST_SECRET, jwt=TEST_JWT, max_retries=0)
    body: dict[str, Any] = {"transaction_token_id": token, "amount": 1000, "currency": "JPY"}

    def raw_post(path: str, payload: dict[str, Any]) -> Any:
        answer = session.post(
            base + path,
            json=payload,
            headers={**headers, "Idempotency-Key": str(uuid.uuid4())},
            timeout=30,
        )
        if answer.status_code >= 300:
            raise RuntimeError(f"{path}: {answer.status_code} {answer.text[:200]}")
        return json.loads(answer.content)

    def nothing() -> list[Any]:
        return []

    def plain(_n: int) -> Any:
        """The fair floor: the shop's attempt committed, the raw POST, the answer stored."""
        from django.db import transaction

        from bench.floor.models import PlainPayment

        with transaction.atomic():
            attempt = PlainPayment.objects.create(
                key=uuid.uuid4(), amount=1000, currency="JPY", status="sending"
            )
        answer = session.post(
            base + "/charges",
            json=body,
            headers={**headers, "Idempotency-Key": str(attempt.key)},
            timeout=30,
        )
        if answer.status_code >= 300:
            raise RuntimeError(f"/charges: {answer.status_code} {answer.text[:200]}")
        charge = json.loads(answer.content)
        PlainPayment.objects.filter(pk=attempt.pk).update(
            status="answered", charge_id=charge["id"], charge_status=charge["status"], answer=charge
        )
        return charge

    if op == "create":
        return {
            "raw requests": (nothing, lambda _n: raw_post("/charges", body)),
            FLOOR: (nothing, plain),
            "PayChargeClient": (
                nothing,
                lambda _n: client.charges.create(**body, idempotency_key=uuid.uuid4()),
            ),
            "create_charge, caller's key": (
                nothing,
                lambda _n: services.create_charge(**body, idempotency_key=f"bench-{uuid.uuid4()}"),
            ),
            "create_charge, no key": (nothing, lambda _n: services.create_charge(**body)),
        }
    capture = op == "capture"
    fields = {**body, "capture": False} if capture else body

    def raw_charges() -> list[Any]:
        return [raw_post("/charges", fields) for _ in range(count)]

    def our_charges() -> list[Any]:
        # As the staff find them: the mirror told by then (a webhook, the customer's return)
        # that the charge moved on, authorized or paid; read off the clock.
        made = [services.create_charge(**fields) for _ in range(count)]
        return [services.wait_for_charge(charge, timeout=10) for charge in made]

    prepared: dict[str, list[Any]] = {}

    def prepare(name: str, make: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        def run() -> list[Any]:
            prepared[name] = make()
            return prepared[name]

        return run

    path = "/stores/" + TEST_STORE_ID + "/charges/{}/" + ("capture" if capture else "refunds")
    money: dict[str, Any] = {"amount": 1000, "currency": "JPY"}
    raw_body = money if capture else {**money, "reason": "customer_request"}

    def raw(n: int) -> Any:
        return raw_post(path.format(prepared["raw requests"][n]["id"]), raw_body)

    def typed(n: int) -> Any:
        charge = prepared["PayChargeClient"][n]
        if capture:
            return client.charges.capture(TEST_STORE_ID, charge["id"], **money)
        return client.refunds.create(TEST_STORE_ID, charge["id"], **money)

    def service(n: int) -> Any:
        charge = prepared["service"][n]
        return (services.capture_charge if capture else services.refund_charge)(charge)

    return {
        "raw requests": (prepare("raw requests", raw_charges), raw),
        "PayChargeClient": (prepare("PayChargeClient", raw_charges), typed),
        "service": (prepare("service", our_charges), service),
    }


def measure(op: str, count: int, rounds: int, first: int = 0) -> dict[str, Any]:
    """Rounds taken in turn: per contender and round, calls/s and CPU ms per call.

    ``first``: the number of the first round (its parity orders the contenders).
    """
    from django.db import close_old_connections

    from bench.webhooks import CpuMeter, _postmaster

    base, headers, token = setup()
    calls = contenders(op, base, headers, token, count)
    boundaries = os.environ.get("BENCH_REQUEST_BOUNDARIES") == "1"
    pg = None
    if os.environ.get("BENCH_DB") == "postgres":
        pg = CpuMeter({"postgres": _postmaster(os.environ["BENCH_DB_NAME"])})
    names = list(calls)
    for prepare, call in calls.values():  # warm-up: connections, imports, statements
        prepare()
        for n in range(min(count, 10)):
            call(n)
    results: dict[str, dict[str, list[float]]] = {
        name: {"rate": [], "cpu": [], "pg": []} for name in names
    }
    for round_ in range(first, first + rounds):
        for name in names if round_ % 2 == 0 else reversed(names):
            prepare, call = calls[name]
            prepare()
            time.sleep(0.2)  # the fake moves new charges on right after answering
            if pg is not None:
                pg.lap()
            started, cpu = time.perf_counter(), time.process_time()
            for n in range(count):
                if boundaries:
                    close_old_connections()
                call(n)
            elapsed = time.perf_counter() - started
            results[name]["rate"].append(count / elapsed)
            results[name]["cpu"].append((time.process_time() - cpu) * 1000 / count)
            if pg is not None:
                results[name]["pg"].append(pg.lap()["postgres"] * 1000 / count)
    return {"op": op, "results": results}


def merge(into: list[dict[str, Any]], more: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rounds of ``more`` (one worker's operations) added to those of ``into``."""
    if not into:
        return more
    for mine, theirs in zip(into, more, strict=True):
        for name, got in theirs["results"].items():
            for key, values in got.items():
                mine["results"][name][key] += values
    return into


def summary(measured: dict[str, Any]) -> list[list[Any]]:
    """One row per contender: median rate, ratios to raw requests and to the checkout's fair
    floor (median, range), CPU ms."""
    results = measured["results"]
    rows = []
    for name, got in results.items():
        rows.append(
            [
                measured["op"],
                name,
                median(got["rate"]),
                _ratio(got["rate"], results["raw requests"]["rate"]),
                _ratio(got["rate"], results[FLOOR]["rate"]) if FLOOR in results else "-",
                median(got["cpu"]),
                median(got["pg"]) if got["pg"] else float("nan"),
            ]
        )
    return rows


def _ratio(rates: list[float], floor: list[float]) -> str:
    """The median of the rounds' own ratios of ``rates`` to ``floor``, with their range."""
    ratios = [r / f for r, f in zip(rates, floor, strict=True)]
    return f"{median(ratios):.2f}x ({min(ratios):.2f}x-{max(ratios):.2f}x)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", default="create,capture,refund")
    parser.add_argument("--first-round", type=int, default=0)
    args = parser.parse_args()
    ops = args.ops.split(",")
    emit({"measured": [measure(op, args.calls, args.rounds, args.first_round) for op in ops]})


if __name__ == "__main__":
    main()
