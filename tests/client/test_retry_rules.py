"""The retry rules as pure functions: no HTTP, no sleeping, no clock."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import requests

from django_paycharge.client.request_log import failure_level
from django_paycharge.client.retries import (
    IN_PROGRESS_CODE,
    retry_decision,
    retryable_answer,
    retryable_failure,
)
from django_paycharge.exceptions import (
    APIError,
    ConflictError,
    RateLimitError,
    ServerError,
    UnsupportedByGatewayError,
)


def _decide(**kwargs: Any) -> bool:
    given: dict[str, Any] = {
        "retryable": True,
        "retry_after": None,
        "attempt": 0,
        "max_retries": 3,
        "max_retry_after": 30.0,
        "deadline": None,
        "now": 100.0,
        **kwargs,
    }
    return retry_decision(**given)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, True),
        ({"retryable": False}, False),
        ({"attempt": 2}, True),
        ({"attempt": 3}, False),  # the fourth attempt was the last of max_retries=3
        ({"max_retries": 0}, False),
        ({"retry_after": 30.0}, True),  # at the cap: waited
        ({"retry_after": 30.5}, False),  # beyond it: a web request would stall
        ({"deadline": 101.0}, True),
        ({"deadline": 100.0}, False),  # no time left: no retry starts
        ({"deadline": 105.0, "retry_after": 4.9}, True),
        ({"deadline": 105.0, "retry_after": 5.0}, False),  # the delay ends at the deadline
    ],
)
def test_retry_decision(kwargs: dict[str, Any], expected: bool) -> None:
    assert _decide(**kwargs) is expected


@pytest.mark.parametrize(
    ("status", "error", "safe", "keyed", "expected"),
    [
        (503, ServerError(), True, False, True),
        (503, ServerError(), False, False, False),  # a POST without a key may have done the work
        (500, ServerError(), True, True, True),
        (504, UnsupportedByGatewayError(), True, True, False),  # permanent: retrying cannot help
        (429, RateLimitError(), False, False, True),  # refused unseen: always safe
        (409, ConflictError(code=IN_PROGRESS_CODE), True, True, True),
        (409, ConflictError(code=IN_PROGRESS_CODE), True, False, False),
        (409, ConflictError(code="OTHER"), True, True, False),
        (400, APIError(), True, True, False),
        (501, ServerError(), True, True, False),  # not in RETRY_STATUSES
    ],
)
def test_retryable_answer(
    status: int, error: APIError, safe: bool, keyed: bool, expected: bool
) -> None:
    assert retryable_answer(status, error, safe=safe, keyed=keyed) is expected


@pytest.mark.parametrize(
    ("exc", "safe", "expected"),
    [
        (requests.ConnectTimeout(), False, True),  # never reached the gateway
        (requests.ConnectionError("reset"), False, False),
        (requests.ConnectionError("reset"), True, True),
        (requests.ReadTimeout(), False, False),
        (requests.ReadTimeout(), True, True),
        (requests.exceptions.ChunkedEncodingError(), True, True),
        (requests.exceptions.InvalidURL(), True, False),
    ],
)
def test_retryable_failure(exc: requests.RequestException, safe: bool, expected: bool) -> None:
    assert retryable_failure(exc, safe=safe) is expected


@pytest.mark.parametrize(
    ("status", "will_retry", "level"),
    [
        (404, False, logging.INFO),
        (404, True, logging.WARNING),
        (503, False, logging.WARNING),
        ("ReadTimeout", False, logging.WARNING),
    ],
)
def test_failure_level(status: int | str, will_retry: bool, level: int) -> None:
    assert failure_level(status, will_retry) == level
