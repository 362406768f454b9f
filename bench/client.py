"""Client benchmark: reads, list pages and the calls that move money, against the fake server.

    bench/run client [--calls 1000] [--rounds 5] [--money-calls 200] [--money-only]
                     [--pg-server-side-binding] [--django-defaults] [--reference COMMIT]

Contenders, interleaved round by round (the median round is reported, so a
burst of load on the machine hits all of them alike):

- ``raw requests``: ``requests.Session().get(...)`` + ``json.loads`` — the floor
  a shop's hand-written code would stand on;
- ``ours``: ``PayChargeClient.charges.retrieve`` / ``.list_page`` (validated
  arguments, typed results, retries, logging);
- ``official SDK``: ``univapay-client-sdk``'s ``get_charge`` /
  ``list_store_charges``;
- references: ``requests`` with ``trust_env=False`` and bare ``http.client``
  (what the transport itself costs on this machine).

Then create, capture and refund, on SQLite and on PostgreSQL: the services
(``create_charge``, ``capture_charge``, ``refund_charge``: request row, call,
stored answer) against a raw ``requests`` POST and our client alone, in a
worker process with a database (``bench/_money_calls.py``). With
``--pg-server-side-binding``, PostgreSQL once more with psycopg binding the
parameters on the server and preparing the statements a process runs often
(``OPTIONS["server_side_binding"]`` and ``["prepare_threshold"]``, a shop's
choice). With ``--reference COMMIT`` (``main``, say), the same worker runs
that commit's ``django_paycharge`` too, taken out of git: one round of each
code in turn, each on its own database, so "before" and "after" come from the
same minutes; every ratio is to the raw ``requests`` call of its own round.
A create is also compared with the checkout's fair floor (the raw POST and the
two committed writes a shop's own exactly-once needs, ``bench/_money_calls.py``);
``--django-defaults`` runs the money calls once more on each database with
Django's default connections (``CONN_MAX_AGE = 0``, closed around each call as
around each request).
"""

from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from bench._common import (
    ROOT,
    Databases,
    bench_env,
    code_at,
    fake_server,
    have_postgres,
    machine,
    median,
    run_worker,
    table,
)
from bench._money_calls import merge, summary
from django_paycharge.client import PayChargeClient
from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID

Call = Callable[[], Any]
#: The money calls' database label for PostgreSQL with server-side binding.
SERVER_SIDE = "postgres, bound on the server and prepared"
#: The money calls' database labels with Django's default connections (a new one a request).
DEFAULTS = {"sqlite": "sqlite, Django's defaults", "postgres": "postgres, Django's defaults"}


def contenders(base_url: str, charge_id: str, sdk: bool) -> dict[str, dict[str, Call]]:
    auth = {"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}", "Accept": "application/json"}
    one = f"{base_url}/stores/{TEST_STORE_ID}/charges/{charge_id}"
    page = f"{base_url}/stores/{TEST_STORE_ID}/charges"
    page_params = {"limit": "100"}

    raw = requests.Session()
    bare = requests.Session()
    bare.trust_env = False
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    ours = PayChargeClient(base_url=base_url, secret=TEST_SECRET, jwt=TEST_JWT, max_retries=0)

    def via_http_client(path: str) -> Any:
        conn.request("GET", path, headers=auth)
        return json.loads(conn.getresponse().read())

    found: dict[str, dict[str, Call]] = {
        "raw requests + json.loads (floor)": {
            "read": lambda: json.loads(raw.get(one, headers=auth).content),
            "page": lambda: json.loads(raw.get(page, params=page_params, headers=auth).content),
        },
        "ours (PayChargeClient)": {
            "read": lambda: ours.charges.retrieve(TEST_STORE_ID, charge_id),
            "page": lambda: ours.charges.list_page(store_id=TEST_STORE_ID, limit=100),
        },
    }
    if sdk:
        from univapayclientsdk.http.auth.oauth_2 import BearerAuthCredentials
        from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

        official = UnivapayClientSdkClient(
            base_url=base_url,
            bearer_auth_credentials=BearerAuthCredentials(TEST_SECRET, TEST_JWT),
        )
        found["official SDK"] = {
            "read": lambda: official.charges.get_charge(TEST_STORE_ID, charge_id).body,
            "page": lambda: official.charges.list_store_charges(TEST_STORE_ID, limit=100).body,
        }
    found["requests, trust_env=False (ref.)"] = {
        "read": lambda: json.loads(bare.get(one, headers=auth).content),
        "page": lambda: json.loads(bare.get(page, params=page_params, headers=auth).content),
    }
    path = urlsplit(one).path
    found["http.client + json.loads (ref.)"] = {
        "read": lambda: via_http_client(path),
        "page": lambda: via_http_client(urlsplit(page).path + "?limit=100"),
    }
    return found


def measure(
    calls: dict[str, dict[str, Call]], kind: str, count: int, rounds: int
) -> dict[str, tuple[float, float]]:
    """Median calls/s and client CPU ms per call over ``rounds`` interleaved rounds.

    CPU time is this (client) process's only: the server's share of each
    call, the same for every contender, is left out of it.
    """
    rates: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for fns in calls.values():
        for _ in range(max(5, count // 20)):  # warm-up: connections, caches
            fns[kind]()
    for _ in range(rounds):
        for name, fns in calls.items():
            fn = fns[kind]
            started, cpu_started = time.perf_counter(), time.process_time()
            for _ in range(count):
                fn()
            rates[name].append(count / (time.perf_counter() - started))
            cpu[name].append((time.process_time() - cpu_started) * 1000 / count)
    return {name: (median(rates[name]), median(cpu[name])) for name in calls}


def main() -> None:
    parser = argparse.ArgumentParser(description="Client benchmark (see bench/README.md).")
    parser.add_argument("--calls", type=int, default=1000, help="single reads per round")
    parser.add_argument("--pages", type=int, default=100, help="list pages per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-sdk", action="store_true", help="leave the official SDK out")
    parser.add_argument("--money-calls", type=int, default=200, help="creates etc. per round")
    parser.add_argument("--money-ops", default="create,capture,refund")
    parser.add_argument("--money-only", action="store_true", help="only create/capture/refund")
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument(
        "--pg-server-side-binding",
        action="store_true",
        help="the money calls on PostgreSQL once more, bound on the server and prepared",
    )
    parser.add_argument(
        "--django-defaults",
        action="store_true",
        help="the money calls once more on each database with CONN_MAX_AGE = 0 (Django's"
        " default) and connections closed around each call, as around each request",
    )
    parser.add_argument(
        "--reference", help="also run the money calls on this commit's code, rounds in turn"
    )
    args = parser.parse_args()
    context = machine()
    with fake_server() as fake:
        if not args.money_only:
            print(reads_and_pages(fake, args))
            print()
        print(money_calls(fake, args))
    print(f"\n{context}")


def reads_and_pages(fake: Any, args: argparse.Namespace) -> str:
    fake.control("seed", {"count": 1000, "seed": 1})
    listed = requests.get(
        f"{fake.base_url}/stores/{TEST_STORE_ID}/charges",
        params={"limit": "10"},
        headers={"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"},
        timeout=10,
    ).json()
    calls = contenders(fake.base_url, listed["items"][0]["id"], not args.skip_sdk)
    reads = measure(calls, "read", args.calls, args.rounds)
    pages = measure(calls, "page", args.pages, args.rounds)
    floor = "raw requests + json.loads (floor)"
    sdk = "official SDK"
    rows = []
    for name in calls:
        row: list[Any] = [name]
        for results in (reads, pages):
            rate, cpu = results[name]
            row += [
                rate,
                f"{results[floor][0] / rate:.2f}x",
                f"{rate / results[sdk][0]:.1f}x" if sdk in results else "-",
                cpu,
                f"{results[sdk][1] / cpu:.1f}x" if sdk in results else "-",
            ]
        rows.append(row)
    return table(
        f"Client: single reads ({args.calls:,}/round) and 100-charge pages "
        f"({args.pages:,}/round), median of {args.rounds} rounds",
        [
            "contender",
            "reads/s",
            "time vs floor",
            "vs SDK",
            "client CPU ms",
            "CPU: SDK / this",
            "pages/s",
            "time vs floor",
            "vs SDK",
            "client CPU ms",
            "CPU: SDK / this",
        ],
        rows,
    )


def money_calls(fake: Any, args: argparse.Namespace) -> str:
    """Create, capture and refund: the services against raw requests, per database."""
    vendors = ["sqlite"] + ([] if args.sqlite_only or not have_postgres() else ["postgres"])
    if args.pg_server_side_binding and "postgres" in vendors:
        vendors.append(SERVER_SIDE)
    if args.django_defaults:
        vendors += [DEFAULTS[vendor] for vendor in ("sqlite", "postgres") if vendor in vendors]
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp))
        codes: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.reference:
            reference = code_at(args.reference, Path(tmp))
            if reference is None:
                print(f"(no git checkout: the reference {args.reference} is left out)")
            else:
                codes.append((args.reference, reference))
        try:
            for vendor in vendors:
                measured = _money_rounds(fake, args, dbs, vendor, codes)
                for label, _code in codes:
                    for op in measured[label]:
                        rows += [[vendor, label, *row] for row in summary(op)]
        finally:
            dbs.drop_all()
    return table(
        f"Calls that move money: {args.money_calls:,} a contender and round, "
        f"median of {args.rounds} rounds (turns)",
        ["database", "code", "call", "contender", "calls/s", "rate vs raw requests (range)",
         "rate vs the fair floor (range)", "client CPU ms", "PostgreSQL CPU ms"],
        rows,
    )  # fmt: skip


def _money_rounds(
    fake: Any,
    args: argparse.Namespace,
    dbs: Databases,
    vendor: str,
    codes: list[tuple[str, Path | None]],
) -> dict[str, list[dict[str, Any]]]:
    """Each code's measurements on ``vendor``: all rounds in one worker when there is one
    code, else one round of each code in turn (the order reversed every other round)."""
    engine = "postgres" if vendor in (SERVER_SIDE, DEFAULTS["postgres"]) else vendor
    engine = "sqlite" if vendor == DEFAULTS["sqlite"] else engine
    defaults = vendor in DEFAULTS.values()
    envs = {}
    for n, (label, code) in enumerate(codes):
        db = dbs.fresh(engine, f"paycharge_bench_money_{n}", code)
        envs[label] = bench_env(
            engine,
            db,
            code,
            BENCH_GATEWAY_URL=fake.base_url,
            BENCH_SQLITE_IMMEDIATE="1",
            BENCH_PG_SERVER_SIDE_BINDING="1" if vendor == SERVER_SIDE else "0",
            BENCH_CONN_MAX_AGE="0" if defaults else "600",
            BENCH_REQUEST_BOUNDARIES="1" if defaults else "0",
        )
    turns = 1 if len(codes) == 1 else args.rounds
    rounds = args.rounds // turns
    found: dict[str, list[dict[str, Any]]] = {label: [] for label, _code in codes}
    for turn in range(turns):
        for label, code in codes if turn % 2 == 0 else list(reversed(codes)):
            worker_args = ["--calls", str(args.money_calls), "--rounds", str(rounds),
                           "--ops", args.money_ops, "--first-round", str(turn)]  # fmt: skip
            done = run_worker("bench._money_calls", worker_args, envs[label], 3600, code or ROOT)
            found[label] = merge(found[label], done["measured"])
    return found


if __name__ == "__main__":
    main()
