"""Benchmark-only middleware: the number of SQL statements a request ran, as a header."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.http import HttpRequest, HttpResponse


class QueryCountMiddleware:
    """Adds ``X-Bench-Queries`` (statements run while answering) to every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        count = 0

        def counter(
            execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any
        ) -> Any:
            nonlocal count
            count += 1
            return execute(sql, params, many, ctx)

        with connection.execute_wrapper(counter):
            response = self.get_response(request)
        response["X-Bench-Queries"] = str(count)
        return response
