"""Concurrency on PostgreSQL: sync, webhooks and customer returns from six processes at once.

Fifty rounds. Each round has six charges: four the mirror already holds
(awaiting) and two it has never seen. Two sync workers, two webhook workers
(each sending its own delivery per charge) and two return workers act on
them while the parent moves them on the gateway (paid, failed or expired),
then all act once more. After every round: one row per charge, equal to the
gateway (status and raw). At the end: no exception escaped any worker, and
``charge_status_changed`` fired exactly once per real change, across all
processes (each charge's firings form one path from its first mirrored
status to its final one, no edge twice).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from django.db import connection  # noqa: F401 - read by the skipif condition

from django_paycharge import services
from django_paycharge.models import Charge
from tests.waiting import process_report, tail, wait_until

from .conftest import as_single, child_env

ROUNDS = 50
MIRRORED, NEW = 2, 1
WORKERS = [("sync", "sync1"), ("sync", "sync2"), ("webhook", "hook1"), ("webhook", "hook2"),
           ("return", "ret1"), ("return", "ret2")]  # fmt: skip
TOKEN = "whk-concurrency-token-51b7"  # the workers' value


def _wait_all(workdir: Path, n: int, procs: list[subprocess.Popen[str]]) -> None:
    def round_done() -> bool:
        # A worker that has finished the last round exits: only one gone before its
        # round's end died.
        dead = [
            (name, p.returncode)
            for (_, name), p in zip(WORKERS, procs, strict=True)
            if p.poll() is not None and not (workdir / f"done-{n}-{name}").exists()
        ]
        assert not dead, f"a worker died: {dead}\n" + "".join(
            tail(workdir / f"stderr-{name}") for name, _ in dead
        )
        return all((workdir / f"done-{n}-{name}").exists() for _, name in WORKERS)

    wait_until(
        round_done,
        f"round {n} to finish",
        every=0.005,
        diagnose=lambda: "\n".join(
            process_report(p, workdir / f"stderr-{name}", name)
            + f"\n{tail(workdir / f'stdout-{name}', 3)}"
            for (_, name), p in zip(WORKERS, procs, strict=True)
        ),
    )


def _signal_damage(
    workdir: Path, initial: dict[str, str | None], final: dict[str, str]
) -> tuple[int, int]:
    """(duplicate or stray firings, missed changes) over all workers' signal logs."""
    edges: dict[str, list[tuple[str | None, str]]] = defaultdict(list)
    for path in workdir.glob("signals-*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            edges[row["id"]].append((row["from"], row["to"]))
    extra = missed = 0
    for cid, end in final.items():
        fired = edges.pop(cid, [])
        by_source = dict(fired)
        extra += len(fired) - len(by_source)  # the same change fired twice
        status, walked = initial[cid], 0
        while status in by_source and status != end:
            status = by_source.pop(status)
            walked += 1
        extra += len(by_source)  # firings off the path: a change reported twice or wrongly
        missed += status != end
    extra += sum(len(v) for v in edges.values())  # firings for charges of no round
    return extra, missed


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
def test_six_processes_on_the_same_charges(fake_gateway_server, tmp_path, reliability_record):
    gateway = fake_gateway_server
    rng = random.Random(11)
    child_settings = {**gateway.settings(), "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(child_settings)})
    script = str(Path(__file__).with_name("concurrency_worker.py"))
    procs = [
        subprocess.Popen(
            [sys.executable, script, role, name, str(tmp_path), str(ROUNDS)],
            env=env,
            stdout=(tmp_path / f"stdout-{name}").open("w"),
            stderr=(tmp_path / f"stderr-{name}").open("w"),
            text=True,
        )
        for role, name in WORKERS
    ]
    initial: dict[str, str | None] = {}
    damage = {"duplicate_rows": 0, "differs_from_gateway": 0, "escaped_errors": 0,
              "signal_fired_twice_or_wrongly": 0, "signal_missed": 0}  # fmt: skip
    try:
        for n in range(ROUNDS):
            charges = []
            for i in range(MIRRORED + NEW):
                kind = rng.choice(["konbini", "bank_transfer", "online"])
                remote = gateway.create_charge(gateway.create_transaction_token(kind)["id"])
                new = i >= MIRRORED
                initial[remote["id"]] = (
                    None if new else services.refresh_charge(remote["id"]).status
                )
                charges.append({"id": remote["id"], "store_id": remote["store_id"], "new": new})
            # Written then renamed: a worker never reads half a file.
            (tmp_path / "round.tmp").write_text(json.dumps(charges))
            (tmp_path / "round.tmp").rename(tmp_path / f"round-{n}.json")
            time.sleep(rng.uniform(0, 0.03))  # let pass 1 start, then move the charges
            for charge in rng.sample(charges, len(charges)):
                rng.choice((gateway.complete, gateway.fail, gateway.expire))(charge["id"])
            (tmp_path / f"changed-{n}").touch()
            _wait_all(tmp_path, n, procs)
            for charge in charges:
                rows = list(
                    Charge.objects.filter(gateway_id=charge["id"]).values_list("status", "raw")
                )
                damage["duplicate_rows"] += abs(len(rows) - 1)
                remote = gateway.charges[charge["id"]]
                rows = [(status, as_single(raw)) for status, raw in rows]
                damage["differs_from_gateway"] += rows != [(remote["status"], remote)]
    finally:
        for proc in procs:
            proc.wait(timeout=30) if proc.poll() is None and (
                tmp_path / f"done-{ROUNDS - 1}-x"
            ).exists() else proc.kill()
    errors = "".join(p.read_text() for p in tmp_path.glob("errors-*.txt"))
    damage["escaped_errors"] = errors.count("Traceback") + errors.count("HTTP ")
    final = {cid: gateway.charges[cid]["status"] for cid in initial}
    twice, missed = _signal_damage(tmp_path, initial, final)
    damage["signal_fired_twice_or_wrongly"], damage["signal_missed"] = twice, missed
    if errors:
        print(errors[:3000])  # before the record's assertion, so a failure shows its cause
    reliability_record(
        "Concurrency: 6 processes on the same charges (PostgreSQL)",
        f"{ROUNDS} rounds x {MIRRORED + NEW} charges; 2 sync, 2 webhook and 2 return processes "
        "racing each other and the gateway's status changes",
        ROUNDS * (MIRRORED + NEW),
        damage,
        note=f"{len(final)} charges, each reached by 6 processes twice per round",
    )
    assert not errors, errors[:3000]
