"""Log lines that join up: every record carries the work's ids and the gateway's request id.

Add :class:`ContextFilter` to a handler and each record gets
``paycharge_delivery``, ``paycharge_charge_request`` (when the line was logged
while that work was done) and ``paycharge_request_id`` (the gateway's id of
the latest answer in that work, unless the line names its own). Format them
with :class:`JsonFormatter` for one JSON object a line (``docs/monitoring.md``).
Nothing here reads a request body, a header or a setting: no secret can get in.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from . import _context

#: Record attributes the filter sets (None when the line was not logged inside such work).
CONTEXT_FIELDS = ("paycharge_delivery", "paycharge_charge_request", "paycharge_request_id")

# Every attribute a plain LogRecord has: what is left over came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


class ContextFilter(logging.Filter):
    """Adds the scope's ids and the latest gateway request id to every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope = _context.current()
        ids = scope.ids if scope is not None else {}
        record.paycharge_delivery = ids.get("delivery")
        record.paycharge_charge_request = ids.get("charge_request")
        if getattr(record, "paycharge_request_id", None) is None:
            record.paycharge_request_id = _context.request_id() or None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC), level, logger, message, ``extra`` fields, traceback."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and value is not None:
                entry[key] = value
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)
