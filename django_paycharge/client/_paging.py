"""Helpers shared by the resource services: path ids and cursor pagination."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from django_paycharge.exceptions import InvalidResponseError

from .types import Charge, Page, Rejected, WebhookConfiguration
from .validation import Checker, validate_uuid

T = TypeVar("T", Charge, WebhookConfiguration)


def path_ids(**values: Any) -> list[str]:
    """Path ids as canonical UUID text; a UUID check also keeps ``/`` out of paths."""
    checker = Checker()
    result = [checker.check(validate_uuid, v, name) for name, v in values.items()]
    checker.raise_if_any()
    return [r for r in result if r is not None]


def follow(
    fetch: Callable[[str | None], Page[T]],
    cursor: str | None,
    rejected: list[Rejected] | None = None,
) -> Iterator[T]:
    """Yield every item, page after page, with the last id of a page as the next cursor.

    Items that could not be read are appended to ``rejected`` when it is given.
    """
    seen: set[str] = set()
    while True:
        page = fetch(cursor)
        if rejected is not None:
            rejected.extend(page.rejected)
        yield from page.items
        if not page.has_more or not page.items:
            return
        cursor = str(page.items[-1].id)
        # A gateway that keeps answering the same page would loop forever.
        if cursor in seen:
            raise InvalidResponseError(
                "The payment service sent the same page twice while listing; stopped."
            )
        seen.add(cursor)
