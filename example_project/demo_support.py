"""Small helpers for ``scripts/demo`` (stdlib only, so they run before Django is set up).

    python demo_support.py credentials          shell assignments of fresh test credentials
    python demo_support.py free-port            a free TCP port on 127.0.0.1
    python demo_support.py wait-url URL [SECS]  wait until URL answers (any HTTP status)
    python demo_support.py register-webhook     register the shop's webhook on the fake gateway
    python demo_support.py seed-charges N       N past charges on the fake (for the dashboard)

The credentials are made up for one run of the fake gateway: they work nowhere else.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request
import uuid

from django_paycharge.testing import make_jwt
from django_paycharge.testing.server import free_port


def credentials() -> str:
    """``NAME=value`` lines (shell-safe characters only) for a fresh fake gateway and shop."""
    store_id, merchant_id = uuid.uuid4(), uuid.uuid4()
    values = {
        "PAYCHARGE_SECRET": "demo-" + secrets.token_urlsafe(24),
        "PAYCHARGE_JWT": make_jwt({"sub": f"demo-{uuid.uuid4()}", "store_id": str(store_id)}),
        # The browser app token of the checkout page's widget: a JWT of its own, no secret.
        "PAYCHARGE_WIDGET_JWT": make_jwt(
            {"sub": f"widget-{uuid.uuid4()}", "store_id": str(store_id)}
        ),
        "PAYCHARGE_STORE_ID": str(store_id),
        "PAYCHARGE_MERCHANT_ID": str(merchant_id),
        "PAYCHARGE_WEBHOOK_AUTH_TOKENS": "demo-webhook-" + secrets.token_urlsafe(24),
        # The bearer token of the shop's metrics endpoint (shop/ops.py).
        "SHOP_METRICS_TOKEN": "demo-metrics-" + secrets.token_urlsafe(24),
    }
    return "\n".join(f"{name}={value}" for name, value in values.items())


def wait_url(url: str, seconds: float = 30.0) -> bool:
    """True once ``url`` answers anything over HTTP, False after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answered
        except OSError:
            time.sleep(0.2)
    return False


def register_webhook() -> str:
    """What a shop owner does once in the gateway's console: point its webhooks at the shop.

    Reads ``PAYCHARGE_BASE_URL``, ``PAYCHARGE_SECRET``, ``PAYCHARGE_JWT``,
    ``PAYCHARGE_STORE_ID``, ``PAYCHARGE_WEBHOOK_AUTH_TOKENS`` (the first) and
    ``SHOP_WEBHOOK_URL``. Returns the configuration's id.
    """
    env = os.environ
    token = env["PAYCHARGE_WEBHOOK_AUTH_TOKENS"].split(",")[0]
    body = {
        "url": env["SHOP_WEBHOOK_URL"],
        "triggers": [
            "charge_updated",
            "charge_finished",
            # A refund or cancel is answered pending; its end comes by these.
            "refund_finished",
            "cancel_finished",
            # The subscription's renewals, failures and changes: each renewal becomes an order.
            "subscription_created",
            "subscription_payment",
            "subscription_failure",
            "subscription_suspended",
            "subscription_canceled",
            "subscription_completed",
            # Saved cards: a renewed card's new token, a deleted card, its security code checked.
            "token_replaced",
            "recurring_token_deleted",
            "token_cvv_auth_updated",
        ],
        "auth_token": token,
        "active": True,
    }
    request = urllib.request.Request(
        f"{env['PAYCHARGE_BASE_URL']}/stores/{env['PAYCHARGE_STORE_ID']}/webhooks",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {env['PAYCHARGE_SECRET']}.{env['PAYCHARGE_JWT']}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(json.load(answer)["id"])


def seed_charges(count: int) -> int:
    """Past charges of every payment type and status on the fake gateway (its seed control).

    They were made over the last 90 days: the shop's sync mirrors them, and the
    admin's dashboard has a month to show.
    """
    request = urllib.request.Request(
        f"{os.environ['PAYCHARGE_BASE_URL']}/_fake/seed",
        data=json.dumps({"count": count, "store_id": os.environ["PAYCHARGE_STORE_ID"]}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(json.load(answer)["created"])


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "credentials":
        print(credentials())
    elif command == "free-port":
        print(free_port())
    elif command == "wait-url":
        return 0 if wait_url(argv[1], float(argv[2]) if len(argv) > 2 else 30.0) else 1
    elif command == "register-webhook":
        print(register_webhook())
    elif command == "seed-charges":
        print(seed_charges(int(argv[1])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
