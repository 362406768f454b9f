"""Requests that move money after a create: capture, cancel, refund, metadata update.

Each is a kind of the one exactly-once machine (:mod:`.exactly_once`, which the
create kind uses too); request rows' bookkeeping lives here. Other flows import
only the names below.
"""

from __future__ import annotations

from .cancels import cancel_charge
from .captures import capture_charge
from .exactly_once import (
    DONE,
    KINDS,
    abandon,
    answer,
    ask,
    check,
    kind_of,
    look_for,
    register,
    send,
)
from .metadata_updates import update_charge_metadata
from .refunds import refund_charge, refundable_amount
from .request_rows import mark, outcome_unknown, request_name, succeed, succeed_statement

__all__ = [
    "DONE",
    "KINDS",
    "abandon",
    "answer",
    "ask",
    "cancel_charge",
    "capture_charge",
    "check",
    "kind_of",
    "look_for",
    "mark",
    "outcome_unknown",
    "refund_charge",
    "refundable_amount",
    "register",
    "request_name",
    "send",
    "succeed",
    "succeed_statement",
    "update_charge_metadata",
]
