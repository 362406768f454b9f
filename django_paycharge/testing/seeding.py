"""Bulk creation of charges for list and sync benchmarks (100,000 in about a second).

Seeded charges skip validation, webhooks and per-insert sorting: they are
built directly and the indexes are sorted once, at the next list request.
"""

from __future__ import annotations

import datetime as dt
import gc
import random
from bisect import bisect
from itertools import accumulate

from ._common import CARD_DECLINED, CARD_SUCCESS, DECLINES, now
from .listing import _EPOCH, micros
from .records import Charge, TransactionToken
from .state import FakeState

_SPREAD = dt.timedelta(days=90)
# (payment_type, weight, token data, statuses with weights)
_KINDS: list[tuple[str, int, dict[str, object], list[tuple[str, int]]]] = [
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
    end = now().replace(tzinfo=None)
    kinds = rng.choices(_KINDS, weights=[k[1] for k in _KINDS], k=count)
    cumulative = {
        k[0]: (list(accumulate(w for _, w in k[3])), [s for s, _ in k[3]]) for k in _KINDS
    }
    new_keys: list[tuple[int, str]] = []
    bits = rng.getrandbits
    random_ = rng.random
    tokens, charges = state.tokens, state.charges
    declined = DECLINES[CARD_DECLINED]
    spread_us = int(_SPREAD / dt.timedelta(microseconds=1))
    end_us = micros(end.replace(tzinfo=dt.UTC))
    for n, (payment_type, _, data, _s) in enumerate(kinds):
        created_us = end_us - int(spread_us * random_())
        created = _EPOCH + dt.timedelta(microseconds=created_us)
        weights, names = cumulative[payment_type]
        status = names[bisect(weights, random_() * weights[-1])]
        card = (
            (CARD_DECLINED if status == "failed" else CARD_SUCCESS)
            if payment_type == "card"
            else None
        )
        token = TransactionToken(
            _uuid4(bits(128)),
            store.id,
            payment_type,
            "one_time",
            "seed@example.com",
            {},
            data,
            created,
            card,
        )
        tokens[token.id] = token
        error = None
        if status == "failed":
            error = {"code": declined[0], "message": declined[1], "detail": declined[1]}
        charge = Charge(
            _uuid4(bits(128)),
            store,
            token,
            100 + bits(16),
            "JPY" if random_() < 0.8 else "USD",
            created,
            _iso(created),
            status != "authorized",
            None,
            None,
            {"order_id": f"seed-{state.seed_calls}-{n}"},
            None,
            None,
            None,
            None,
            status,
            error,
            status == "successful",
        )
        charges[charge.id] = charge
        new_keys.append((created_us, charge.id))
    state.index.add_unsorted(new_keys)
    state.store_index[store.id].add_unsorted(new_keys)
