"""Bulk creation of charges for list and sync benchmarks (``docs/benchmarks.md`` times it).

Seeded charges skip validation, webhooks and per-insert sorting: they are
built directly and the indexes are sorted once, at the next list request.
"""

from __future__ import annotations

import datetime as dt
import gc
import random
from bisect import bisect
from itertools import accumulate

from .basics import CARD_DECLINED, CARD_SUCCESS, DECLINES, failure, now
from .listing import EPOCH, micros
from .records import Charge, Store, TransactionToken
from .state import FakeState

_SPREAD_US = int(dt.timedelta(days=90) / dt.timedelta(microseconds=1))
# (payment_type, weight, token data, statuses with weights)
_Kind = tuple[str, int, dict[str, object], list[tuple[str, int]]]
_KINDS: list[_Kind] = [
    (
        "card",
        50,
        {
            "cardholder": "SEED BUYER",
            "exp_month": 12,
            "exp_year": 2099,
            "last_four": "4242",
            "card_bin": "424242",
            "brand": "visa",
        },
        [("successful", 75), ("failed", 10), ("authorized", 10), ("canceled", 5)],
    ),
    (
        "online",
        20,
        {"brand": "paypay", "call_method": "http_post"},
        [("successful", 60), ("awaiting", 20), ("failed", 10), ("canceled", 10)],
    ),
    (
        "konbini",
        15,
        {"customer_name": "SEED BUYER", "convenience_store": "seven_eleven"},
        [("successful", 50), ("awaiting", 30), ("canceled", 20)],
    ),
    (
        "bank_transfer",
        15,
        {},
        [("successful", 50), ("awaiting", 35), ("canceled", 15)],
    ),
]


# Per payment type: cumulative status weights and the statuses, to draw with one bisect.
_STATUS_DRAWS = {
    kind[0]: (list(accumulate(w for _, w in kind[3])), [s for s, _ in kind[3]]) for kind in _KINDS
}
_DECLINED = failure(*DECLINES[CARD_DECLINED])


def _uuid4(bits: int) -> str:
    # Formatting by hand: uuid.UUID() costs more than the rest of a seeded charge.
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def _iso(value: dt.datetime) -> str:
    return value.isoformat(timespec="microseconds")[:-6] + "Z"  # faster than strftime


def seed_charges(
    state: FakeState, count: int, *, store_id: str | None = None, seed: int = 0
) -> int:
    """Add ``count`` charges of mixed payment types and statuses, created over the last 90 days.

    Deterministic for a given ``seed`` and call number (two calls never repeat ids).
    """
    if count < 0:
        raise ValueError("count must not be negative")
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection per few thousand new objects would dominate the run time
    try:
        with state.lock:
            _seed_locked(state, count, store_id, seed)
    finally:
        if gc_was_enabled:
            gc.enable()
    return count


def _seed_locked(state: FakeState, count: int, store_id: str | None, seed: int) -> None:
    state.seed_calls += 1
    rng = random.Random(f"{seed}:{state.seed_calls}")  # noqa: S311 - reproducible data
    store = state.stores[store_id or state.default_credentials[2]]
    kinds = rng.choices(_KINDS, weights=[k[1] for k in _KINDS], k=count)
    end_us = micros(now())
    new_keys: list[tuple[int, str]] = []
    for n, kind in enumerate(kinds):
        created_us = end_us - int(_SPREAD_US * rng.random())
        charge = _seeded_charge(rng, store, kind, created_us, f"seed-{state.seed_calls}-{n}")
        state.tokens[charge.token.id] = charge.token
        state.charges[charge.id] = charge
        new_keys.append((created_us, charge.id))
    state.index.add_unsorted(new_keys)
    state.store_index[store.id].add_unsorted(new_keys)


def _seeded_charge(
    rng: random.Random, store: Store, kind: _Kind, created_us: int, order_id: str
) -> Charge:
    """One charge of ``kind`` and its token, in a status drawn from the kind's weights."""
    payment_type, _, data, _ = kind
    created = EPOCH + dt.timedelta(microseconds=created_us)
    weights, names = _STATUS_DRAWS[payment_type]
    status = names[bisect(weights, rng.random() * weights[-1])]
    card = None
    if payment_type == "card":
        card = CARD_DECLINED if status == "failed" else CARD_SUCCESS
    token = TransactionToken(
        _uuid4(rng.getrandbits(128)),
        store.id,
        payment_type,
        "one_time",
        "seed@example.com",
        {},
        data,
        created,
        card,
    )
    return Charge(
        _uuid4(rng.getrandbits(128)),
        store,
        token,
        100 + rng.getrandbits(16),
        "JPY" if rng.random() < 0.8 else "USD",
        created,
        _iso(created),
        status != "authorized",
        None,
        None,
        {"order_id": order_id},
        None,
        None,
        None,
        None,
        status,
        _DECLINED if status == "failed" else None,
        status == "successful",
    )
