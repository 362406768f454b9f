"""Sorted indexes and cursor pagination, fast enough for 100,000 charges.

Keys are ``(created_us, id)`` pairs kept in ascending order, so a page is a
bisect plus a slice, never a scan of the whole collection.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from .basics import Json, parse_iso, validation_error

Key = tuple[int, str]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_US = dt.timedelta(microseconds=1)


def micros(value: dt.datetime) -> int:
    """Exact integer microseconds since the epoch (floats would blur ties)."""
    return (value - EPOCH) // _US


class SortedIndex:
    """Keys in ascending order. Appends are O(1) when keys arrive in time order."""

    def __init__(self) -> None:
        self.keys: list[Key] = []
        self._dirty = False

    def add(self, key: Key) -> None:
        """Insert one key, keeping the order."""
        if self._dirty or not self.keys or key >= self.keys[-1]:
            self.keys.append(key)
        else:
            insort(self.keys, key)

    def add_unsorted(self, keys: list[Key]) -> None:
        """Bulk insert; the sort happens once, at the next read."""
        self.keys.extend(keys)
        self._dirty = True

    def sorted_keys(self) -> list[Key]:
        """The keys, sorted (after sorting a bulk insert once)."""
        if self._dirty:
            self.keys.sort()
            self._dirty = False
        return self.keys

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, slots=True)
class PageQuery:
    """The pagination parameters of a list request, validated."""

    limit: int = 10
    cursor: str | None = None
    descending: bool = True
    from_us: int | None = None
    to_us: int | None = None


def parse_page_query(query: Mapping[str, str]) -> PageQuery:
    """Validate ``limit``, ``cursor``, ``cursor_direction``, ``from`` and ``to``."""
    errors: list[tuple[str, str]] = []
    limit = 10
    raw_limit = query.get("limit")
    if raw_limit is not None:
        if raw_limit.isdigit() and 10 <= int(raw_limit) <= 100:
            limit = int(raw_limit)
        else:
            errors.append(("limit", "MUST_BE_BETWEEN_10_AND_100"))
    direction = query.get("cursor_direction", "desc")
    if direction not in ("asc", "desc"):
        errors.append(("cursor_direction", "MUST_BE_ASC_OR_DESC"))
    bounds: dict[str, int | None] = {"from": None, "to": None}
    for name in bounds:
        raw = query.get(name)
        if raw is not None:
            parsed = parse_iso(raw)
            if parsed is None:
                errors.append((name, "INVALID_FORMAT"))
            else:
                bounds[name] = micros(parsed)
    cursor = query.get("cursor") or None
    if errors:
        raise validation_error(errors)
    return PageQuery(limit, cursor, direction == "desc", bounds["from"], bounds["to"])


@dataclass(frozen=True, slots=True)
class Page:
    """Ids of one page, whether more follow, and how many match the whole query."""

    ids: list[str]
    has_more: bool
    total_hits: int


def paginate(
    keys: list[Key],
    page: PageQuery,
    cursor_key: Callable[[str], Key | None],
    accept: Callable[[str], bool] | None = None,
) -> Page:
    """One page of ``keys`` (sorted ascending) for ``page``; ``accept`` filters ids.

    ``from`` is inclusive and ``to`` exclusive, so adjacent windows never
    overlap. ``cursor_key`` maps a cursor id to its key, or None when unknown.
    """
    lo = 0 if page.from_us is None else bisect_left(keys, (page.from_us, ""))
    hi = len(keys) if page.to_us is None else bisect_left(keys, (page.to_us, ""))
    hi = max(lo, hi)
    start, stop = lo, hi
    if page.cursor is not None:
        key = cursor_key(page.cursor)
        if key is None:
            raise validation_error([("cursor", "NOT_FOUND")])
        pos = bisect_left(keys, key)
        if page.descending:
            stop = max(lo, min(hi, pos))
        else:
            start = min(hi, max(lo, pos + 1))
    if accept is None:  # every key counts: slices, no scan
        if page.descending:
            chosen = keys[max(start, stop - page.limit) : stop][::-1]
        else:
            chosen = keys[start : min(stop, start + page.limit)]
        return Page([k[1] for k in chosen], stop - start > page.limit, hi - lo)
    ids, has_more = _first_accepted(_walk(keys, start, stop, page.descending), accept, page.limit)
    total = sum(1 for i in range(lo, hi) if accept(keys[i][1]))
    return Page(ids, has_more, total)


def _first_accepted(
    keys: Iterator[Key], accept: Callable[[str], bool], limit: int
) -> tuple[list[str], bool]:
    """Up to ``limit`` accepted ids, and whether another one follows."""
    ids: list[str] = []
    for key in keys:
        if accept(key[1]):
            if len(ids) == limit:
                return ids, True
            ids.append(key[1])
    return ids, False


def _walk(keys: list[Key], start: int, stop: int, descending: bool) -> Iterator[Key]:
    indexes = range(stop - 1, start - 1, -1) if descending else range(start, stop)
    for i in indexes:
        yield keys[i]


class Listed(Protocol):
    """A record of a short list (webhook configurations, a charge's refunds or cancels)."""

    @property
    def id(self) -> str: ...

    @property
    def created(self) -> dt.datetime: ...

    def to_json(self) -> Json: ...


def page_of(records: Mapping[str, Listed], page: PageQuery) -> Json:
    """A page of a short list: few records, so they are sorted per request."""
    keys = sorted((micros(r.created), r.id) for r in records.values())

    def cursor_key(record_id: str) -> Key | None:
        found = records.get(record_id)
        return (micros(found.created), found.id) if found is not None else None

    result = paginate(keys, page, cursor_key)
    return {"items": [records[i].to_json() for i in result.ids], "has_more": result.has_more}
