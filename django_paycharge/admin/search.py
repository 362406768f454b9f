"""The charge search's id prefixes: what the changelist shows finds its charges by index."""

from __future__ import annotations

import uuid

#: The shortest id prefix searched: the changelist shows 8 characters.
MIN_ID_PREFIX = 8
_HEX = frozenset("0123456789abcdef")


def id_prefix_range(term: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The ids starting with ``term`` (8+ hex characters, dashes ignored) as a range.

    A range on the unique index of ``gateway_id`` finds them without a scan on
    every database: UUIDs order as their hex digits, in PostgreSQL's ``uuid``
    type as in the ``char(32)`` other databases store.
    """
    # What staff copy from the list ends with the ellipsis.
    digits = term.rstrip("…").replace("-", "").lower()
    if not MIN_ID_PREFIX <= len(digits) < 32 or not set(digits) <= _HEX:
        return None
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))
