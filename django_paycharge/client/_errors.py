"""Exceptions from attempts: error answers, network failures, 2xx bodies that cannot be read."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

import requests

from django_paycharge.exceptions import (
    APIError,
    FieldError,
    InvalidResponseError,
    NetworkError,
    NotSentError,
    error_class_for,
    gettext_noop,
)

from .parsing import ShapeError
from .retries import never_sent

T = TypeVar("T")

_MAX_FIELD_ERRORS = 50
_MAX_REASON = 500


def api_error(
    response: requests.Response, request_id: str | None, clean: Callable[[str], str]
) -> APIError:
    """The exception for a non-2xx answer: by status, or by the gateway's code where its
    meaning differs (see :func:`~django_paycharge.exceptions.error_class_for`); any body,
    even HTML or none, still maps by status."""
    status = response.status_code
    code: str | None = None
    errors: list[FieldError] = []
    try:
        payload = json.loads(response.content)
    except (ValueError, RecursionError):
        payload = None
    if isinstance(payload, dict):
        raw_code = payload.get("code")
        if isinstance(raw_code, str) and raw_code:
            code = clean(raw_code[:100])
        raw_errors = payload.get("errors")
        if isinstance(raw_errors, list):
            for item in raw_errors[:_MAX_FIELD_ERRORS]:
                if isinstance(item, dict):
                    field, reason = item.get("field"), item.get("reason")
                    errors.append(
                        FieldError(
                            clean("" if field is None else str(field)[:_MAX_REASON]),
                            clean("" if reason is None else str(reason)[:_MAX_REASON]),
                        )
                    )
    cls = error_class_for(status, code, [e.field for e in errors])
    detail = f"HTTP {status}, {code}" if code else f"HTTP {status}"
    return cls(
        f"{cls.default_message} ({detail})",
        http_status=status,
        code=code,
        errors=errors,
        request_id=request_id,
    )


def network_error(exc: requests.RequestException, method: str) -> NetworkError:
    """A :class:`NetworkError` whose message says whether the request may have been processed;
    a :class:`NotSentError` when it provably never left (see :func:`.retries.never_sent`)."""
    # The message is ours: requests' own text may carry the URL's host and port
    # but adds nothing a caller can act on.
    # Marked for translation, translated when shown (PayChargeError.__str__): no Django here.
    if isinstance(exc, requests.ConnectTimeout):
        return NotSentError(
            gettext_noop("Could not connect to the payment service in time; nothing was sent.")
        )
    if never_sent(exc):
        return NotSentError(
            gettext_noop("Could not connect to the payment service; nothing was sent.")
        )
    if isinstance(exc, requests.Timeout) and method == "GET":
        message = gettext_noop("The payment service did not answer in time.")
    elif isinstance(exc, requests.Timeout):
        message = gettext_noop(
            "The payment service did not answer in time. It may have processed the request: "
            "retry with the same idempotency key, or read the resource before trying again."
        )
    elif isinstance(exc, requests.ConnectionError):
        message = gettext_noop("The connection to the payment service failed.")
    else:
        message = f"The request to the payment service failed ({type(exc).__name__})."
    return NetworkError(message)


def read_body(
    response: requests.Response,
    parse: Callable[[Any], T],
    request_id: str | None,
    clean: Callable[[str], str],
) -> T:
    """The 2xx body, read by ``parse``; an :class:`InvalidResponseError` when it cannot be.

    An empty body is handed to ``parse`` as ``None``: a capture answered 201 with
    nothing (the Java SDK's own test serves that) went through; a charge cannot.
    """
    try:
        content = response.content
        payload = json.loads(content, parse_float=Decimal) if content.strip() else None
    except (ValueError, RecursionError):
        raise InvalidResponseError(
            f"{InvalidResponseError.default_message} The body is not JSON "
            f"(HTTP {response.status_code}).",
            http_status=response.status_code,
            request_id=request_id,
        ) from None
    try:
        return parse(payload)
    except (ShapeError, ValueError, TypeError) as exc:
        raise InvalidResponseError(
            f"{InvalidResponseError.default_message} {clean(str(exc))} "
            f"(HTTP {response.status_code}).",
            http_status=response.status_code,
            request_id=request_id,
        ) from None


def without_tracebacks(exc: BaseException) -> BaseException:
    """``exc`` with the tracebacks of its whole chain dropped; their messages stay.

    The frames of ``requests`` and ``urllib3`` in them hold the request's
    headers, credentials included, as local variables, and Django's DEBUG
    page shows the locals of every chained exception's frames.
    """
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return exc
