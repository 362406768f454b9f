"""Front end 1: ``requests`` calls to the fake's base URL reach the app through ``responses``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

if TYPE_CHECKING:
    from responses import RequestsMock

    from .app import FakeApp

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD")


def _read_timeout(request: Any) -> float | None:
    timeout = getattr(request, "req_kwargs", {}).get("timeout")
    if isinstance(timeout, tuple):
        timeout = timeout[1]
    return float(timeout) if isinstance(timeout, int | float) else None


class ResponsesFrontend:
    """Registers one callback per HTTP method on a ``responses.RequestsMock``."""

    def __init__(self, app: FakeApp) -> None:
        self.app = app

    def url_pattern(self) -> re.Pattern[str]:
        """Every URL under the base URL, and nothing else."""
        return re.compile(re.escape(self.app.base_url) + r"(?:[/?#].*)?$")

    def install(self, mock: RequestsMock) -> None:
        """Add the fake's routes to ``mock`` (ours, or a test's own mock)."""
        pattern = self.url_pattern()
        for method in METHODS:
            mock.add_callback(method, pattern, callback=self.callback, content_type=None)

    def callback(self, request: requests.PreparedRequest) -> Any:
        """Answer a prepared request; drops and time-outs become ``requests`` exceptions."""
        parts = urlsplit(request.url or "")
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes):
            body = b"".join(body)  # a generator body (streamed upload)
        answer = self.app.handle(
            request.method or "GET",
            parts.path,
            parts.query,
            dict(request.headers),
            body,
            read_timeout=_read_timeout(request),
        )
        if answer.fault_action in ("drop_before", "drop_after"):
            return requests.ConnectionError(
                "Connection aborted: the fake gateway dropped the connection",
                request=request,
            )
        if answer.fault_action == "timeout":
            return requests.ReadTimeout("fake gateway: read timed out", request=request)
        return (answer.status, answer.headers, answer.body)
