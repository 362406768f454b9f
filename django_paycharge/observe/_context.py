"""The log context of one piece of work: whose it is, and the gateway's request ids it met.

A scope (``scoped(delivery="12")``) lives in a :mod:`contextvars` variable, so
it follows the work into threads started with a copy of the context (the
sync's readers, the client's page fetcher) and never leaks into the next
piece of work of the same thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class Scope:
    """Ids naming the work (``delivery``, ``charge_request``) and the request ids it met."""

    ids: dict[str, str]
    #: ``(method, request id)`` of each gateway answer, oldest first (a few per scope).
    answers: list[tuple[str, str]] = field(default_factory=list)


_scope: ContextVar[Scope | None] = ContextVar("paycharge_scope", default=None)

#: Answers kept per scope: a long walk of pages needs only its latest ids.
_KEPT = 20


@contextmanager
def scoped(**ids: str) -> Iterator[Scope]:
    """A scope for the work inside; an enclosing scope's ids are kept unless renamed."""
    outer = _scope.get()
    scope = Scope({**(outer.ids if outer else {}), **ids})
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


def current() -> Scope | None:
    return _scope.get()


def note_answer(method: str, request_id: str | None) -> None:
    scope = _scope.get()
    if scope is None or not request_id:
        return
    scope.answers.append((method, request_id))
    del scope.answers[:-_KEPT]


def request_id(method: str | None = None) -> str:
    """The latest gateway request id of this scope (of a ``method`` call); "" if none."""
    scope = _scope.get()
    for seen_method, seen_id in reversed(scope.answers if scope else ()):
        if method is None or seen_method == method:
            return seen_id
    return ""
