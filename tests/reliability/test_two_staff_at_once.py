"""Two staff act on one charge at the same moment: threads (both databases), processes (PostgreSQL).

Each round makes one charge; two callers with keys of their own capture it,
cancel it, refund all of it, or refund 600 of its 1,000 each, at once. The
gateway (the fake over real HTTP, its POSTs slowed to 0.2 s to widen the race)
must see one capture, one cancel, one full refund; partial refunds must never
add up beyond the charge; and no caller may be told "refused" for work the
gateway did for it. The processes are the API's way (DRF, ``Idempotency-Key``)
and the admin's (the service), as ``tests/reliability/lifecycle_child.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection

from django_paycharge import services
from django_paycharge.exceptions import ChargeBusyError, PayChargeError
from django_paycharge.models import Charge
from tests.waiting import join, process_report, tail, wait_exit, wait_until

from .conftest import child_env
from .test_lifecycle_outcomes import (
    CHARGE,
    KINDS,
    PARTIAL,
    done_at_gateway,
    new_charge,
    refunded_at_gateway,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROUNDS = 4  # per kind
POSTS = {"capture": "/capture", "cancel": "/cancels"}


def gateway_posts(gateway: Any, kind: str, charge: Charge) -> int:
    suffix = POSTS.get(kind, "/refunds")
    prefix = f"/charges/{charge.gateway_id}"
    return len(
        [
            r
            for r in gateway.requests_log
            if r["method"] == "POST" and r["path"].endswith(prefix + suffix)
        ]
    )


def count_round(
    gateway: Any, kind: str, charge: Charge, outcomes: list[str], damage: Counter[str]
) -> None:
    posts = gateway_posts(gateway, kind, charge)
    done = done_at_gateway(gateway, kind, charge)
    if kind == "partial refund":
        damage["beyond_charge"] += refunded_at_gateway(gateway, charge) > CHARGE
        damage["done_twice"] += done > outcomes.count("done")
    else:
        damage["second_request_sent"] += posts > 1
        damage["done_twice"] += done > 1
    damage["told_done_not_done"] += outcomes.count("done") > done
    damage["refused_though_done"] += done > outcomes.count("done")
    damage["errors"] += outcomes.count("error") + outcomes.count("unknown")


def by_service(kind: str, charge: Charge, who: str) -> str:
    amount = PARTIAL if kind == "partial refund" else None
    try:
        if kind == "capture":
            services.capture_charge(charge, requested_by=who)
        elif kind == "cancel":
            services.cancel_charge(charge, requested_by=who)
        else:
            services.refund_charge(charge, amount=amount, requested_by=who)
    except ChargeBusyError:
        return "busy"
    except PayChargeError as exc:
        return exc.outcome or "refused"
    except Exception:
        return "error"
    finally:
        connection.close()
    return "done"


def race(kind: str, charge: Charge) -> list[str]:
    """Both callers at the same moment, each on its own thread and connection."""
    barrier = threading.Barrier(2)
    outcomes = ["", ""]

    def run(i: int) -> None:
        barrier.wait()
        outcomes[i] = by_service(kind, charge, f"staff-{i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        join(thread, f"a {kind} of one of the two staff")
    return outcomes


def test_two_staff_at_once_in_threads(fake_gateway_server, reliability_record):
    fake_gateway_server.add_fault(
        "POST", r"/(capture|cancels|refunds)$", action="latency", latency=0.2
    )
    damage: Counter[str] = Counter(
        dict.fromkeys(("second_request_sent", "done_twice", "beyond_charge", "refused_though_done",
                       "told_done_not_done", "errors"), 0)
    )  # fmt: skip
    cases, told = 0, Counter[str]()
    for kind in KINDS:
        for _ in range(ROUNDS):
            charge = new_charge(fake_gateway_server, kind)
            outcomes = race(kind, charge)
            count_round(fake_gateway_server, kind, charge, outcomes, damage)
            told.update(outcomes)
            cases += 1
    reliability_record(
        "Two staff at once (threads)",
        "two threads capture, cancel, fully refund or refund 600 of 1,000 of one charge at the "
        f"same moment with keys of their own, {ROUNDS} rounds each; the gateway's POSTs take "
        "0.2 s; real HTTP fake",
        cases,
        damage,
        note=_note(told),
    )
    assert told["busy"] + told["refused"], "the two callers never overlapped: nothing was proven"


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
def test_two_processes_at_once(fake_gateway_server, tmp_path, reliability_record):
    fake_gateway_server.add_fault(
        "POST", r"/(capture|cancels|refunds)$", action="latency", latency=0.2
    )
    user = User.objects.create(username="operator", is_staff=True)
    for codename in ("capture_charge", "cancel_charge", "refund_charge"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    gateway = fake_gateway_server
    rounds = [(kind, new_charge(gateway, kind)) for kind in KINDS for _ in range(ROUNDS)]
    (tmp_path / "rounds.json").write_text(
        json.dumps([{"kind": k, "charge": c.pk} for k, c in rounds])
    )
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(fake_gateway_server.settings())})
    script = str(Path(__file__).with_name("lifecycle_child.py"))
    children = [
        subprocess.Popen(
            [sys.executable, script, mode, str(tmp_path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / f"stderr-{mode}").open("w"),
        )
        for mode in ("api", "admin")
    ]
    damage: Counter[str] = Counter(
        dict.fromkeys(("second_request_sent", "done_twice", "beyond_charge", "refused_though_done",
                       "told_done_not_done", "errors"), 0)
    )  # fmt: skip
    told = Counter[str]()
    modes = ("api", "admin")
    finished = False
    try:
        for n, (kind, charge) in enumerate(rounds):
            (tmp_path / f"go-{n}").touch()
            results = [tmp_path / f"result-{n}-{mode}.json" for mode in modes]

            def round_done(results: list[Path] = results) -> bool:
                # A child that wrote its last result exits: only one gone before that died.
                dead = [
                    m
                    for m, c, r in zip(modes, children, results, strict=True)
                    if c.poll() is not None and not r.exists()
                ]
                assert not dead, f"a child died: {dead}\n" + "".join(
                    tail(tmp_path / f"stderr-{m}") for m in dead
                )
                return all(r.exists() for r in results)

            wait_until(
                round_done,
                f"round {n} ({kind}) to finish",
                every=0.01,
                diagnose=lambda: "\n".join(
                    process_report(c, tmp_path / f"stderr-{m}", m)
                    for m, c in zip(modes, children, strict=True)
                ),
            )
            outcomes = [json.loads(p.read_text())["outcome"] for p in results]
            count_round(fake_gateway_server, kind, charge, outcomes, damage)
            told.update(outcomes)
        finished = True
    finally:
        for child in children:
            if not finished:  # it waits for a round that will not come
                child.kill()
            wait_exit(child, "a child after its last round")
    reliability_record(
        "Two processes at once: API and admin (PostgreSQL)",
        "two processes (the API with Idempotency-Key, the admin's service) capture, cancel, "
        "fully refund or refund 600 of 1,000 of one charge at the same moment, "
        f"{ROUNDS} rounds each; the gateway's POSTs take 0.2 s; real HTTP fake",
        len(rounds),
        damage,
        note=_note(told),
    )
    assert told["busy"] + told["refused"], "the two processes never overlapped: nothing was proven"


def _note(told: Counter[str]) -> str:
    return (
        f"callers told: done {told['done']}, busy (nothing sent, try again) {told['busy']}, "
        f"refused before sending {told['refused']}"
    )
