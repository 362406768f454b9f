"""Requests per second of the fake gateway server: one keep-alive client, simple GETs.

    .venv/bin/python bench/fake_server_rps.py [--requests 5000] [--url BASE_URL]

Without ``--url`` it starts a server in this process (its own thread); with
``--url`` it measures a server started elsewhere (``python -m
django_paycharge.testing.server``), which keeps the client and the server
from sharing one interpreter lock: the figure to report.
"""

from __future__ import annotations

import argparse
import http.client
import json
import time
from urllib.parse import urlsplit

from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--url", help="base URL of a running fake server")
    args = parser.parse_args()
    server = None
    if args.url:
        base_url = args.url.rstrip("/")
    else:
        from django_paycharge.testing.server import RunningServer

        server = RunningServer("127.0.0.1", 0)
        base_url = server.base_url
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=10)
    auth = {"Authorization": f"Bearer {TEST_SECRET}.{TEST_JWT}"}
    # One charge to read back: the realistic "simple GET" of a status poll.
    conn.request(
        "POST",
        "/_fake/tokens",
        body=json.dumps(
            {
                "payment_type": "card",
                "data": {"card_number": "4242424242424242", "exp_month": 12, "exp_year": 2099},
            }
        ),
        headers={"Content-Type": "application/json"},
    )
    token = json.loads(conn.getresponse().read())
    conn.request(
        "POST",
        "/charges",
        body=json.dumps({"transaction_token_id": token["id"], "amount": 1000, "currency": "JPY"}),
        headers={**auth, "Content-Type": "application/json"},
    )
    charge = json.loads(conn.getresponse().read())
    path = f"/stores/{TEST_STORE_ID}/charges/{charge['id']}"
    for _ in range(200):  # warm-up
        conn.request("GET", path, headers=auth)
        conn.getresponse().read()
    started = time.perf_counter()
    for _ in range(args.requests):
        conn.request("GET", path, headers=auth)
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            raise SystemExit(f"unexpected status {answer.status}")
    elapsed = time.perf_counter() - started
    print(f"{args.requests} GETs in {elapsed:.2f} s: {args.requests / elapsed:,.0f} req/s")
    conn.close()
    if server is not None:
        server.stop()


if __name__ == "__main__":
    main()
