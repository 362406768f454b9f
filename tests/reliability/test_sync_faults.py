"""Sync under faults: ~20% of list calls fail in every way the network and the gateway can.

The real HTTP fake answers list calls with 429, 500, 503, a latency longer
than the client's read time-out, a reset connection or half a JSON body,
each drawn from its own seeded generator (deterministic). Between rounds the
gateway moves on (charges paid, failed, new ones). The sync is run until it
completes; at the end the mirror must equal the gateway exactly.

Then real ``paycharge_sync`` processes (``sync_child.py``) against the HTTP
fake at a distance: SIGKILLed mid-run and run again (nothing lost, no
finished window asked again), charges created and paid while one runs
(stored by it or by the next run), and two at once for one account (the
second refused with a clear message or waiting; a killed holder frees the
lock at once).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from django.db.models import Sum

from django_paycharge import services
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import Charge, SyncCheckpoint, SyncWindow
from django_paycharge.services.sync.windows import MARGIN
from tests.waiting import GUARD, finish, process_report, wait_exit, wait_until

from .conftest import ROOT, as_single, child_env

LIST = r"/charges$"  # both list endpoints; never a single-charge read
FAULTS: tuple[dict[str, Any], ...] = (
    {"action": "status", "status": 429, "retry_after": 0},
    {"action": "status", "status": 500},
    {"action": "status", "status": 503},
    {"action": "latency", "latency": 0.6},  # read time-out is 0.25 s
    {"action": "drop_before"},
    {"action": "malformed"},
)
# Six independent draws of 3.7% each: about 20% of list calls are broken.
PROBABILITY = 0.037
MAX_ROUNDS = 60


def _mirror_diff(gateway) -> dict[str, int]:
    remote = {cid: gateway.charges[cid] for cid in gateway.charges}
    local = {str(c.gateway_id): c for c in Charge.objects.all()}
    missing = set(remote) - set(local)
    extra = set(local) - set(remote)
    wrong_status = sum(
        1 for cid in set(remote) & set(local) if local[cid].status != remote[cid]["status"]
    )
    both = set(remote) & set(local)
    wrong_raw = sum(1 for cid in both if as_single(local[cid].raw) != remote[cid])
    return {
        "lost": len(missing),
        "extra": len(extra),
        "wrong_status": wrong_status,
        "wrong_raw": wrong_raw,
    }


def _sync_until_done(errors: dict[str, int], *, full: bool = False) -> int:
    for rounds in range(1, MAX_ROUNDS + 1):
        try:
            services.sync_charges(full=full)
        except PayChargeError as exc:
            # A clear error: a named class and a message that says what happened.
            assert str(exc), type(exc)
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            continue
        return rounds
    raise AssertionError(f"sync did not complete in {MAX_ROUNDS} rounds: {errors}")


def _move_the_gateway(gateway, rng: random.Random) -> None:
    open_ids = [c for c in gateway.charges if gateway.charges[c]["status"] == "awaiting"]
    for cid in rng.sample(open_ids, min(15, len(open_ids))):
        rng.choice((gateway.complete, gateway.fail, gateway.expire))(cid)
    for _ in range(rng.randint(1, 8)):
        gateway.create_charge(gateway.create_transaction_token("konbini")["id"], amount=700)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("seed", [2, 3, 5])
def test_sync_under_list_faults_ends_equal_to_the_gateway(
    fake_gateway_server, settings, reliability_record, seed
):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TIMEOUT": (1.0, 0.25),
        "MAX_RETRIES": 1,  # few retries, so faults also stop whole runs
        "RETRY_BACKOFF": 0.001,
        "RETRY_BACKOFF_MAX": 0.002,
    }
    gateway = fake_gateway_server
    gateway.seed(600, seed=seed)
    rng = random.Random(seed)
    faults = [
        gateway.add_fault("GET", LIST, probability=PROBABILITY, seed=seed * 100 + i, **spec)
        for i, spec in enumerate(FAULTS)
    ]
    errors: dict[str, int] = {}
    rounds = _sync_until_done(errors)
    for _ in range(4):  # the gateway moves on; incremental and full syncs, same faults
        _move_the_gateway(gateway, rng)
        rounds += _sync_until_done(errors)
        rounds += _sync_until_done(errors, full=True)
    list_calls = sum(
        1 for r in gateway.requests_log if r["method"] == "GET" and r["path"].endswith("/charges")
    )
    fired = {f.action + (f"_{f.status}" if f.status else ""): f.fired for f in faults}
    gateway.clear_faults()
    damage = _mirror_diff(gateway)
    assert sum(fired.values()) > 0.1 * list_calls, (fired, list_calls)
    assert all(fired.values()), fired  # every kind of fault was met at least once
    reliability_record(
        f"Sync under faults (seed {seed})",
        "~20% of list calls: 429, 500, 503, read time-out, connection reset, malformed "
        "body; 600 charges, then 4 times: the gateway moves on, an incremental and a full sync",
        list_calls,
        damage,
        note=(
            f"faults fired {sum(fired.values())} ({fired}); failed runs {sum(errors.values())} "
            f"({errors}); rounds needed {rounds}"
        ),
    )


# -- real processes: killed syncs, charges moving meanwhile, two syncs at once ----------------

HERE = Path(__file__).resolve().parent


def _sync_process(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """``paycharge_sync args`` in a child process (see sync_child.py)."""
    return subprocess.Popen(
        [sys.executable, str(HERE / "sync_child.py"), *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _pages_stored() -> int:
    return int(SyncWindow.objects.aggregate(n=Sum("pages"))["n"] or 0)


def _sync_report(process: subprocess.Popen[str]) -> str:
    windows = list(SyncWindow.objects.values("start", "end", "pages", "done"))
    return f"{process_report(process)}\nsync windows: {windows}"


def _wait_for(condition, process: subprocess.Popen[str], what: str) -> None:
    assert _reached(condition, process, what), (
        f"the sync ended before {what}: {process.communicate()}"
    )


def _reached(condition, process: subprocess.Popen[str], what: str) -> bool:
    """Whether ``condition`` held while the sync still ran (False: it ended first)."""
    reached = wait_until(
        lambda: "reached" if condition() else "ended" if process.poll() is not None else "",
        what,
        every=0.005,
        diagnose=lambda: _sync_report(process),
    )
    return reached == "reached"


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    return finish(process, "the sync", diagnose=lambda: _sync_report(process))


def _asked_inside(requests_log, done) -> int:
    """List requests that asked for charges from inside a window already read to its end."""
    earliest = datetime.min.replace(tzinfo=UTC)
    inside = 0
    for request in requests_log:
        asked = parse_qs(request["query"])
        if request["method"] != "GET" or not request["path"].endswith("/charges"):
            continue
        if "from" not in asked:
            inside += any(w.start is None for w in done)
            continue
        start = datetime.fromisoformat(asked["from"][0]) + MARGIN  # windows ask a second early
        inside += any(
            (w.start or earliest) <= start and (w.end is None or start < w.end) for w in done
        )
    return inside


@pytest.mark.django_db(transaction=True)
def test_sigkill_mid_sync_then_resume_loses_nothing_and_rereads_no_finished_window(
    fake_gateway_server, reliability_record
):
    gateway = fake_gateway_server
    gateway.seed(3_000, seed=7)
    gateway.latency = 0.02
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(gateway.settings())})
    damage = {"lost": 0, "extra": 0, "wrong_status": 0, "pages_reread": 0, "locked_out": 0}
    finished_at_kill = []
    kill_points = {
        "after 3 pages": lambda: _pages_stored() >= 3,
        "after 12 pages": lambda: _pages_stored() >= 12,
        "once a window is done": lambda: SyncWindow.objects.filter(done=True).exists(),
    }
    for point, reached in kill_points.items():
        # The windows share the work out, so they end close together: on a busy machine
        # the whole run may end before this process sees the first window done. Then the
        # point is tried again with pages ten and a hundred times slower.
        for latency in (0.02, 0.2, 2.0):
            gateway.latency = latency
            Charge.objects.all().delete()
            SyncCheckpoint.objects.all().delete()
            child = _sync_process(env, "--charges", "--full", "--windows", "4")
            if _reached(reached, child, point):
                break
            code, output = _finish(child)
            assert code == 0, output
        else:
            raise AssertionError(f"every run ended before {point}")
        child.send_signal(signal.SIGKILL)
        assert wait_exit(child, "the killed sync") == -signal.SIGKILL
        gateway.latency = 0.02
        done = list(SyncWindow.objects.filter(done=True))
        finished_at_kill.append(len(done))
        before = len(gateway.requests_log)
        code, output = _finish(_sync_process(env, "--charges", "--full", "--windows", "4"))
        damage["locked_out"] += code != 0
        assert code == 0, output
        damage["pages_reread"] += _asked_inside(gateway.requests_log[before:], done)
        diff = _mirror_diff(gateway)
        for key in ("lost", "extra", "wrong_status"):
            damage[key] += diff[key]
    assert sum(finished_at_kill) > 0, "no window had finished at any kill: nothing was proved"
    reliability_record(
        "Sync killed (SIGKILL) mid-run, then run again",
        "a real paycharge_sync --full --windows 4 process SIGKILLed after 3 and 12 of 30 pages "
        "and once its first window is done; 20 ms per request; the next run resumes",
        3,
        damage,
        note=f"windows finished at each kill: {finished_at_kill}; none of them asked again",
    )


@pytest.mark.django_db(transaction=True)
def test_charges_created_or_paid_during_a_sync_are_stored_by_it_or_the_next_run(
    fake_gateway_server, reliability_record
):
    gateway = fake_gateway_server
    gateway.seed(3_000, seed=11)
    # Only the list pages are far away: the shop's changes below take no time.
    gateway.add_fault("GET", r"/charges$", action="latency", latency=0.15)
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(gateway.settings())})
    awaiting = [c for c in gateway.charges if gateway.charges[c]["status"] == "awaiting"][:20]
    token = gateway.create_transaction_token("konbini")["id"]
    child = _sync_process(env, "--charges", "--full", "--windows", "4")
    _wait_for(lambda: _pages_stored() >= 2, child, "two pages")
    created = []
    for n, cid in enumerate(awaiting):
        created.append(gateway.create_charge(token, amount=300 + n)["id"])
        gateway.complete(cid)
    assert child.poll() is None, "the sync ended before the gateway moved on: nothing was proved"
    code, output = _finish(child)
    assert code == 0, output
    by_the_run = Charge.objects.filter(gateway_id__in=created).count()
    code, output = _finish(_sync_process(env, "--charges"))  # the next incremental run
    assert code == 0, output
    diff = _mirror_diff(gateway)
    reliability_record(
        "Charges created and paid while a sync runs",
        "20 charges created and 20 awaiting ones paid on the gateway while a real "
        "paycharge_sync --full --windows 4 process reads 3,000 (150 ms per list page); then one "
        "incremental run",
        40,
        {k: diff[k] for k in ("lost", "extra", "wrong_status", "wrong_raw")},
        note=f"{by_the_run} of the 20 new charges stored by the run itself, the rest by the next",
    )


@pytest.mark.django_db(transaction=True)
def test_two_syncs_of_one_account_never_run_at_once(fake_gateway_server, reliability_record):
    gateway = fake_gateway_server
    gateway.seed(4_000, seed=13)
    gateway.latency = 0.15
    env = child_env({"PAYCHARGE_CHILD_SETTINGS": json.dumps(gateway.settings())})
    damage = {
        "second_not_refused": 0,
        "no_clear_message": 0,
        "waiter_failed": 0,
        "lock_kept_by_dead_process": 0,
        "lost": 0,
        "extra": 0,
    }
    first = _sync_process(env, "--charges", "--full", "--windows", "1")
    _wait_for(lambda: _pages_stored() >= 1, first, "a page")
    # The first sync's 39 pages left now take 5 s each: it holds the lock for minutes, not
    # for however long a loaded machine takes to start the second process.
    gateway.latency = 5.0
    second = _sync_process(env, "--charges")
    # It waits for the lock until the first sync ends: its limit is only a guard.
    waiter = _sync_process(env, "--charges", "--wait", str(int(GUARD)))
    code, output = _finish(second)
    damage["second_not_refused"] += code == 0
    damage["no_clear_message"] += "Another sync of account default is running" not in output
    assert first.poll() is None, "the first sync ended before the second was refused"
    gateway.latency = 0.15
    code, output = _finish(first)
    assert code == 0, output
    code, output = _finish(waiter)
    damage["waiter_failed"] += code != 0
    # A holder that dies frees the lock at once: no lease to wait out.
    gateway.latency = 0.05
    Charge.objects.all().delete()
    dying = _sync_process(env, "--charges", "--full", "--windows", "2")
    _wait_for(lambda: _pages_stored() >= 2, dying, "two pages")
    dying.send_signal(signal.SIGKILL)
    wait_exit(dying, "the killed sync")
    code, output = _finish(_sync_process(env, "--charges", "--full", "--windows", "2"))
    damage["lock_kept_by_dead_process"] += code != 0
    diff = _mirror_diff(gateway)
    damage["lost"], damage["extra"] = diff["lost"], diff["extra"]
    reliability_record(
        "Two syncs of one account at once",
        "real paycharge_sync processes: a second one while a full sync runs (exits, or waits "
        "with --wait), then a sync right after the holder is SIGKILLed; 150 and 50 ms per request",
        3,
        damage,
    )
