"""One worker process of the PostgreSQL concurrency test.

    python tests/reliability/concurrency_worker.py ROLE NAME WORKDIR ROUNDS

ROLE is ``sync``, ``webhook`` or ``return``. For each round the parent writes
``round-N.json`` (the round's charges); the worker acts on them (pass 1),
waits for ``changed-N`` (the parent has moved the charges on the gateway),
acts again (pass 2) and writes ``done-N-NAME``. Every ``charge_status_changed``
it sends is appended to ``signals-NAME.jsonl``; every exception that escapes
a service or a view, and every unexpected HTTP status, to ``errors-NAME.txt``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

TOKEN = "whk-concurrency-token-51b7"  # a test value


def wait_for(path: Path) -> None:
    """Until the test writes ``path``."""
    from tests.waiting import wait_until

    wait_until(path.exists, f"{path.name} from the test", every=0.003)


def main() -> None:
    role, name, workdir, rounds = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    import django

    django.setup()
    from django.conf import settings

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        **json.loads(os.environ["PAYCHARGE_CHILD_SETTINGS"]),
    }
    settings.ALLOWED_HOSTS = ["*"]
    from django.db import connections

    # Keep one connection for the whole run: the test client closes it after
    # every request otherwise, and reconnecting cost more than the work.
    connections["default"].settings_dict["CONN_MAX_AGE"] = None
    from django.test import Client

    from django_paycharge import services, signals
    from tests.waiting import GUARD

    signal_log = (workdir / f"signals-{name}.jsonl").open("a", encoding="utf-8")
    error_log = (workdir / f"errors-{name}.txt").open("a", encoding="utf-8")

    def on_change(*, charge: Any, previous_status: str | None, status: str, **kwargs: Any) -> None:
        line = {"id": str(charge.gateway_id), "from": previous_status, "to": status, "by": name}
        signal_log.write(json.dumps(line) + "\n")
        signal_log.flush()

    signals.charge_status_changed.connect(on_change, weak=False)
    client = Client(raise_request_exception=True)

    def act(charges: list[dict[str, Any]], seq: str) -> None:
        if role == "sync":
            # One sync per account at a time: the second sync worker waits for the first
            # (both still race the webhook and return workers).
            # The wait ends when the other one is done: its limit is the tests' guard.
            services.sync_charges(wait=GUARD)
            return
        for charge in charges:
            if role == "webhook":
                body = {
                    "id": f"{name}-{seq}-{charge['id']}",
                    "event": "charge_finished",
                    "data": charge,
                }
                response = client.post(
                    "/payments/webhook/",
                    json.dumps(body),
                    content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
                )
                if response.status_code != 200:
                    error_log.write(f"webhook {charge['id']}: HTTP {response.status_code}\n")
            else:
                response = client.get("/payments/return/", {"serviceChargeId": charge["id"]})
                allowed = (302, 404) if charge["new"] else (302,)
                if response.status_code not in allowed:
                    error_log.write(f"return {charge['id']}: HTTP {response.status_code}\n")

    for n in range(rounds):
        wait_for(workdir / f"round-{n}.json")
        started = time.monotonic()
        charges = json.loads((workdir / f"round-{n}.json").read_text())
        for seq, marker in (("1", None), ("2", f"changed-{n}")):
            if marker:
                wait_for(workdir / marker)
            try:
                act(charges, f"{n}.{seq}")
            except Exception:
                error_log.write(traceback.format_exc() + "\n")
            error_log.flush()
        (workdir / f"done-{n}-{name}").touch()
        print(f"round {n}: {time.monotonic() - started:.2f}s", flush=True)


if __name__ == "__main__":
    main()
