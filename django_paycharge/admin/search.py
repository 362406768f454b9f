"""The charge search's id prefixes: what the changelist shows finds its charges by index."""

from __future__ import annotations

import uuid

from django.utils.translation import gettext

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


def short_id_hint(term: str) -> str:
    """What to tell staff who searched a few characters of an id ("" for other terms).

    Fewer than 8 characters would match far too many ids to be searched by
    index: the term was compared with merchant transaction ids only.
    """
    digits = term.rstrip("…").replace("-", "").lower()
    if not 0 < len(digits) < MIN_ID_PREFIX or not set(digits) <= _HEX:
        return ""
    return gettext(
        "“%(term)s” was looked for as a merchant transaction id only: to search by charge id, "
        "give its first %(count)d characters or more (as the list shows them)."
    ) % {"term": term, "count": MIN_ID_PREFIX}
