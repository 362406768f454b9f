"""Cursor pagination, shared by the resource services.

A page is first read as decoded JSON (:class:`RawPage`): the cursor of the
next page (the last item's id) is known then, before the items are typed, so
a :class:`Prefetcher` can send the next request while the caller parses,
stores and checks the page it holds.
"""

from __future__ import annotations

import contextvars
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django_paycharge.exceptions import InvalidResponseError

from .lifecycle_types import Cancel, Refund
from .parsing import ShapeError
from .subscription_types import ScheduledPayment, Subscription
from .types import Charge, JSONObject, Page, Rejected, WebhookConfiguration

if TYPE_CHECKING:
    from .transport import Transport

T = TypeVar("T", Charge, WebhookConfiguration, Refund, Cancel, Subscription, ScheduledPayment)
P = TypeVar("P")


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


def follow_list(
    transport: Transport,
    path: str,
    parse_page: Callable[[Any], Page[T]],
    params: Mapping[str, str],
    rejected: list[Rejected] | None,
) -> Iterator[T]:
    """Every item of the list at ``GET path``, from ``params``' cursor on (see :func:`follow`)."""

    def fetch(after: str | None) -> Page[T]:
        query = params if after is None else {**params, "cursor": after}
        return transport.request("GET", path, parse_page, params=query)

    return follow(fetch, params.get("cursor"), rejected)


@dataclass(frozen=True, slots=True)
class RawPage(Generic[T]):
    """A list page as the gateway sent it (decoded JSON), its items not typed yet.

    ``items`` are the items' JSON objects; ``cursor`` is the id to ask the
    next page after: the last item's, or the last one's that has a usable id
    (None when none has). :meth:`parse` types the page.
    """

    body: JSONObject
    items: list[Any]
    has_more: bool
    cursor: str | None
    _parse: Callable[[Any], Page[T]] = field(repr=False)

    def parse(self) -> Page[T]:
        """The typed page, as ``list_page`` returns it."""
        try:
            return self._parse(self.body)
        except (ShapeError, ValueError, TypeError) as exc:
            raise InvalidResponseError(
                f"{InvalidResponseError.default_message} {exc} (a list page)."
            ) from None


def raw_page_parser(parse: Callable[[Any], Page[T]]) -> Callable[[Any], RawPage[T]]:
    """A parser of the list's envelope only; ``parse`` types the whole page later."""

    def read(value: Any) -> RawPage[T]:
        if type(value) is not dict:
            raise ShapeError("the list is not a JSON object")
        items, has_more = value.get("items"), value.get("has_more")
        if type(items) is not list:
            raise ShapeError("field 'items' is missing or not a list")
        if type(has_more) is not bool:
            raise ShapeError("field 'has_more' is missing or not a boolean")
        return RawPage(value, items, has_more, _last_id(items), parse)

    return read


def _last_id(items: list[Any]) -> str | None:
    for item in reversed(items):
        value = item.get("id") if type(item) is dict else None
        if isinstance(value, str):
            try:
                return str(uuid.UUID(value))
            except ValueError:
                continue
    return None


class Prefetcher(Generic[P]):
    """The pages of one cursor walk, each requested as soon as its cursor is known.

    A thread of its own calls ``fetch(cursor)``, then ``follow(page)`` for the
    next cursor (None: that page is the last), and sends the next request at
    once: the caller's work on a page (typing, storing) overlaps the
    gateway's answer time for the next. At most :data:`AHEAD` pages wait for
    the caller, so memory stays flat however long the walk. Iterating yields
    ``(page, last)``.
    """

    #: Pages fetched and not yet taken, at most; a caller this far behind is the
    #: bottleneck, and fetching more would only hold more pages in memory.
    AHEAD = 2

    def __init__(
        self,
        fetch: Callable[[str | None], P],
        follow: Callable[[P], str | None],
        cursor: str | None,
        *,
        name: str = "paycharge-pages",
    ) -> None:
        self._fetch, self._follow = fetch, follow
        self._cond = threading.Condition()
        self._ready: deque[tuple[P, bool]] = deque()
        self._error: BaseException | None = None
        self._finished = self._closed = False
        # The caller's context goes along (contextvars): an observer's trace and log context
        # see the pages' requests as the caller's own.
        self._thread = threading.Thread(
            target=contextvars.copy_context().run, args=(self._run, cursor), name=name, daemon=True
        )
        self._thread.start()

    def _run(self, cursor: str | None) -> None:
        seen: set[str | None] = set()
        try:
            while True:
                with self._cond:
                    while len(self._ready) >= self.AHEAD and not self._closed:
                        self._cond.wait()
                    if self._closed:
                        return
                page = self._fetch(cursor)
                seen.add(cursor)
                cursor = self._follow(page)
                if (
                    cursor is not None and cursor in seen
                ):  # a gateway answering the same page again would loop
                    raise InvalidResponseError(
                        "The payment service sent the same page twice while listing; stopped."
                    )
                with self._cond:
                    self._ready.append((page, cursor is None))
                    self._cond.notify_all()
                if cursor is None:
                    return
        except BaseException as exc:  # handed to the caller, raised there
            with self._cond:
                self._error = exc
                self._cond.notify_all()
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def __iter__(self) -> Iterator[tuple[P, bool]]:
        while True:
            with self._cond:
                while not self._ready and self._error is None and not self._finished:
                    self._cond.wait()
                if self._ready:
                    item = self._ready.popleft()
                    self._cond.notify_all()  # the next request may leave now
                elif self._error is not None:
                    raise self._error
                else:
                    return
            yield item
            if item[1]:
                return

    def close(self, timeout: float | None = None) -> None:
        """Stop asking for pages; wait up to ``timeout`` seconds for a request in flight."""
        with self._cond:
            self._closed = True
            self._ready.clear()
            self._cond.notify_all()
        self._thread.join(timeout)
