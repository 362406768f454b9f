"""Sync under faults: ~20% of list calls fail in every way the network and the gateway can.

The real HTTP fake answers list calls with 429, 500, 503, a latency longer
than the client's read time-out, a reset connection or half a JSON body,
each drawn from its own seeded generator (deterministic). Between rounds the
gateway moves on (charges paid, failed, new ones). The sync is run until it
completes; at the end the mirror must equal the gateway exactly.
"""

from __future__ import annotations

import random

import pytest

from django_paycharge import services
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import Charge

LIST = r"/charges$"  # both list endpoints; never a single-charge read
FAULTS = (
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
    wrong_raw = sum(1 for cid in set(remote) & set(local) if local[cid].raw != remote[cid])
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
