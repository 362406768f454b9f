"""A webhook delivery's body: read as a JSON object, or refused with a reason; made storable."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext

from ...nesting import nesting_exceeds, text_nesting_exceeds

#: Levels of nested arrays and objects a delivery may have (Python 3.11's parser
#: stops near this; a gateway's event has a handful).
MAX_BODY_DEPTH = 1000


class MalformedDelivery(ValueError):
    """The body of an authenticated delivery is not the JSON object it should be."""


def storable(text: str) -> str:
    """``text`` without NUL characters, which PostgreSQL refuses in text columns.

    Without this, an authenticated body with a NUL (UTF-16 JSON, binary junk,
    a ``\\u0000`` escape in the event) could never be stored: every repeat
    answered 503 and the gateway retried forever.
    """
    return text.replace("\x00", "\ufffd")


def storable_value(text: str) -> str:
    """A string parsed from the body, storable: no NUL, and no lone surrogate.

    JSON may escape half a surrogate pair (``"\\ud800"``), which no database
    can encode; it would make the delivery unstorable, answered 503 forever.
    """
    return storable(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))


def read_payload(text: str) -> dict[str, Any]:
    """The body as a JSON object, or :class:`MalformedDelivery` saying why it is not one."""
    # Python's parser gives up near its recursion limit (about 1,000 levels) on
    # 3.11 and 3.12, later on 3.13: the depth is measured, so every Python says so.
    try:
        payload = json.loads(text)
    except RecursionError:
        raise _too_deep() from None
    except ValueError:
        if text_nesting_exceeds(text, MAX_BODY_DEPTH):
            raise _too_deep() from None
        raise MalformedDelivery(gettext("The body is not JSON.")) from None
    # Each level opens a bracket in the text: a body with fewer brackets than the limit
    # (every genuine event) is not walked (the receipt reads every body).
    if _brackets(text) > MAX_BODY_DEPTH and nesting_exceeds(payload, MAX_BODY_DEPTH):
        raise _too_deep()
    if not isinstance(payload, dict):
        raise MalformedDelivery(gettext("The body is not a JSON object."))
    return payload


def _brackets(text: str) -> int:
    """How many arrays and objects the text could open at most (brackets in strings too)."""
    return text.count("[") + text.count("{")


def _too_deep() -> MalformedDelivery:
    # Translated only when said: the receipt reads every body (bench/run webhooks).
    return MalformedDelivery(gettext("The body is nested too deeply to read."))
