"""A strict Content-Security-Policy for the shop's pages (Django 5.2 has none built in).

Scripts run only from the shop's static files or with the request's nonce (the
payment app's auto-submit script picks up ``request.csp_nonce``); the browser
may call only the shop and the gateway (the checkout creates the transaction
token there). The admin keeps Django's defaults.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def gateway_origin() -> str:
    """``scheme://host[:port]`` of ``PAYCHARGE["BASE_URL"]``."""
    parts = urlsplit(str(settings.PAYCHARGE.get("BASE_URL", "")))
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = secrets.token_urlsafe(16)
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        response = self.get_response(request)
        if request.path.startswith("/admin/") or "Content-Security-Policy" in response:
            return response
        gateway = gateway_origin()
        response["Content-Security-Policy"] = "; ".join(
            [
                "default-src 'self'",
                f"script-src 'self' 'nonce-{nonce}'",
                f"connect-src 'self' {gateway}".strip(),
                "style-src 'self'",
                "img-src 'self' data:",
                "object-src 'none'",
                "base-uri 'self'",
                "frame-ancestors 'none'",
            ]
        )
        return response
