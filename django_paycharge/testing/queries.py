"""Charge lists and idempotency records: the read-heavy and bookkeeping parts of the state."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._common import ApiError, Json
from .listing import SortedIndex, micros, paginate, parse_page_query
from .records import AppToken, Charge, Store


@dataclass(slots=True)
class IdempotencyRecord:
    """The first request made with a key; ``response`` is None while it is in progress."""

    fingerprint: str
    response: tuple[int, dict[str, str], bytes] | None = None


class ChargeListMixin:
    """``GET /charges`` and ``GET /stores/{s}/charges`` over the state's sorted indexes."""

    lock: threading.RLock
    stores: dict[str, Store]
    charges: dict[str, Charge]
    index: SortedIndex
    store_index: dict[str, SortedIndex]

    # -- lists ----------------------------------------------------------------------------

    def list_charges(self, app: AppToken, store: Store | None, query: Mapping[str, str]) -> Json:
        """A page of charges of one store, or of every store the credentials reach."""
        page = parse_page_query(query)
        wanted = {
            k: query[k]
            for k in (
                "currency",
                "mode",
                "transaction_token_id",
                "status",
                "merchant_transaction_id",
            )
            if k in query
        }
        if "currency" in wanted:
            wanted["currency"] = wanted["currency"].upper()
        with self.lock:
            if store is not None:
                index, scope = self.store_index[store.id], {store.id}
            else:
                scope = {s.id for s in self.stores.values() if app.reaches(s)}
                index = self.index
            whole = store is not None or len(scope) == len(self.stores)
            charges = self.charges

            def in_scope(cid: str) -> bool:
                return charges[cid].store.id in scope

            def accept(cid: str) -> bool:
                c = charges[cid]
                return (whole or c.store.id in scope) and all(
                    _field(c, k) == v for k, v in wanted.items()
                )

            def cursor_key(cid: str) -> tuple[int, str] | None:
                c = charges.get(cid)
                return (micros(c.created), c.id) if c is not None and in_scope(cid) else None

            result = paginate(
                index.sorted_keys(), page, cursor_key, None if whole and not wanted else accept
            )
            items = [charges[cid].to_json() for cid in result.ids]
        return {"items": items, "has_more": result.has_more, "total_hits": result.total_hits}


class IdempotencyMixin:
    """First answers per (credentials, ``Idempotency-Key``), replayed to later requests."""

    lock: threading.RLock
    idempotency: dict[tuple[str, str], IdempotencyRecord]

    # -- idempotency ----------------------------------------------------------------------

    def claim_key(self, app: AppToken, key: str, fingerprint: str) -> IdempotencyRecord | None:
        """The finished record to replay, None after claiming the key, or a 409."""
        with self.lock:
            record = self.idempotency.get((app.secret + "." + app.jwt, key))
            if record is None:
                self.idempotency[(app.secret + "." + app.jwt, key)] = IdempotencyRecord(fingerprint)
                return None
            if record.fingerprint != fingerprint:
                raise ApiError(
                    409, "IDEMPOTENCY_KEY_CONFLICT", [("Idempotency-Key", "DIFFERENT_REQUEST")]
                )
            if record.response is None:
                raise ApiError(
                    409, "IDEMPOTENCY_KEY_IN_PROGRESS", [("Idempotency-Key", "IN_PROGRESS")]
                )
            return record

    def settle_key(
        self, app: AppToken, key: str, response: tuple[int, dict[str, str], bytes] | None
    ) -> None:
        """Store the answer for replays, or free the key (``None``) when no work was done."""
        with self.lock:
            if response is None:
                self.idempotency.pop((app.secret + "." + app.jwt, key), None)
            else:
                self.idempotency[(app.secret + "." + app.jwt, key)].response = response


def _field(charge: Charge, name: str) -> Any:
    if name == "transaction_token_id":
        return charge.token.id
    return getattr(charge, name)
