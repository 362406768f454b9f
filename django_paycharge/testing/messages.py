"""What a handler of the fake takes and returns: a :class:`Request` and a :class:`FakeResponse`.

Neither knows about sockets or ``responses``: the front ends translate.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from .basics import ApiError, Json
from .records import AppToken

JSON_HEADERS = {"Content-Type": "application/json"}
HTML_HEADERS = {"Content-Type": "text/html; charset=utf-8"}


@dataclass(slots=True)
class FakeResponse:
    """An answer. ``fault_action``: None, ``drop_before``, ``drop_after`` or ``timeout``."""

    status: int
    headers: dict[str, str]
    body: bytes
    fault_action: str | None = None

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(slots=True)
class Request:
    """One request: headers lower-cased, the first value of each query parameter.

    Routing fills ``params`` (the path's ``{name}`` segments) and, on routes that
    need credentials, ``app``. A handler appends to ``after`` what must happen
    once its answer is settled (a charge moving on from ``pending``).
    """

    method: str
    path: str
    raw_query: str
    headers: Mapping[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(init=False)
    app: AppToken | None = None
    after: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.query = (
            dict(parse_qsl(self.raw_query, keep_blank_values=True)) if self.raw_query else {}
        )

    def json(self) -> Json:
        """The body as a JSON object, or a 400 ``INVALID_REQUEST_BODY``."""
        try:
            value = json.loads(self.body or b"null")
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise ApiError(400, "INVALID_REQUEST_BODY", [("body", "MUST_BE_JSON_OBJECT")])
        return value

    def optional_json(self) -> Json:
        """The JSON object sent, or ``{}`` when there is no body (a full capture, a control)."""
        return self.json() if self.body.strip() else {}

    def form(self) -> dict[str, str]:
        """The body's form fields (``application/x-www-form-urlencoded``)."""
        return dict(parse_qsl(self.body.decode("utf-8", "replace"), keep_blank_values=True))

    def credentials(self) -> AppToken:
        """The app token of a route that requires one (routing has checked it)."""
        assert self.app is not None  # the route table requires credentials here
        return self.app


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> FakeResponse:
    """A JSON answer (an empty body for 204)."""
    raw = b"" if status == 204 else json.dumps(body).encode()
    return FakeResponse(status, {**JSON_HEADERS, **(headers or {})}, raw)


def error_response(exc: ApiError) -> FakeResponse:
    """The gateway's error answer for ``exc``."""
    return json_response(exc.status, exc.body(), dict(exc.headers))


def html_page(status: int, title: str, text: str) -> FakeResponse:
    """A small HTML page of the fake provider or card issuer."""
    body = (
        f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></body></html>"
    )
    return FakeResponse(status, dict(HTML_HEADERS), body.encode())


def redirect(location: str) -> FakeResponse:
    """A ``303 See Other`` to ``location`` (the customer goes back to the shop)."""
    return FakeResponse(303, {"Location": location, "Content-Type": "text/plain"}, b"")
