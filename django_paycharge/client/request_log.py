"""The log line of each attempt: method, path (personal data masked), status, time, request id.

Logger ``django_paycharge.client``. Headers, bodies and credentials are never
logged; query values that are personal data are shown as ``***``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from urllib.parse import urlencode

logger = logging.getLogger("django_paycharge.client")

#: Query parameters whose values are personal data, masked in the log line.
_MASKED_PARAMS = frozenset({"email", "phone", "name", "last_four"})


def log_path(path: str, params: Mapping[str, str] | None) -> str:
    """``path`` with its query string, personal values masked."""
    if not params:
        return path
    shown = {k: ("***" if k in _MASKED_PARAMS else v) for k, v in params.items()}
    return f"{path}?{urlencode(shown)}"


def failure_level(status: int | str, will_retry: bool) -> int:
    """INFO for a plain 4xx answer (the caller's problem); WARNING when the gateway
    or the network is in trouble, or the attempt is retried."""
    quiet = isinstance(status, int) and status < 500 and not will_retry
    return logging.INFO if quiet else logging.WARNING


def log_attempt(
    level: int,
    method: str,
    path: str,
    status: int | str,
    started: float,
    attempt: int,
    request_id: str | None,
) -> None:
    """Log one attempt; ``started`` is its :func:`time.perf_counter` start, ``attempt`` from 0."""
    if not logger.isEnabledFor(level):
        return
    duration_ms = (time.perf_counter() - started) * 1000
    logger.log(
        level,
        "%s %s -> %s in %.0f ms (attempt %d, request id %s)",
        method,
        path,
        status,
        duration_ms,
        attempt + 1,
        request_id or "-",
        extra={
            "paycharge_method": method,
            "paycharge_path": path,
            "paycharge_status": status,
            "paycharge_duration_ms": duration_ms,
            "paycharge_attempt": attempt + 1,
            "paycharge_request_id": request_id,
        },
    )
