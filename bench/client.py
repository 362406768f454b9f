"""Client benchmark: single-charge reads and 100-charge list pages against the fake server.

    bench/run client [--calls 1000] [--rounds 5]

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
"""

from __future__ import annotations

import argparse
import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests

from bench._common import fake_server, machine, median, table
from django_paycharge.client import PayChargeClient
from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID

Call = Callable[[], Any]


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
    args = parser.parse_args()
    context = machine()
    with fake_server() as fake:
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
    print(
        table(
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
    )
    print(f"\n{context}")


if __name__ == "__main__":
    main()
