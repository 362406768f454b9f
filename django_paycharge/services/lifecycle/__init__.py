"""Requests that move money after a create: capture, cancel, refund, metadata update.

Each is a kind of the one exactly-once machine (:mod:`.exactly_once`, which the
create kind uses too); request rows' bookkeeping lives here. Other flows import
only the names below.
"""

from __future__ import annotations

from .cancels import CANCEL, cancel_charge
from .captures import CAPTURE, capture_charge
from .exactly_once import (
    DONE,
    Asked,
    RequestKind,
    Result,
    Row,
    abandon,
    answer,
    ask,
    check,
    look_for,
    send,
)
from .metadata_updates import UPDATE, update_charge_metadata
from .refunds import (
    REFUND,
    left_to_refund,
    refund_annotations,
    refund_charge,
    refundable_amount,
    refundable_amounts,
    reserved_amounts,
)
from .request_rows import mark, outcome_unknown, request_name, succeed, succeed_statement
from .requests import CLOCK_SLACK

__all__ = [
    "CANCEL",
    "CAPTURE",
    "CLOCK_SLACK",
    "DONE",
    "REFUND",
    "UPDATE",
    "Asked",
    "RequestKind",
    "Result",
    "Row",
    "abandon",
    "answer",
    "ask",
    "cancel_charge",
    "capture_charge",
    "check",
    "left_to_refund",
    "look_for",
    "mark",
    "outcome_unknown",
    "refund_annotations",
    "refund_charge",
    "refundable_amount",
    "refundable_amounts",
    "request_name",
    "reserved_amounts",
    "send",
    "succeed",
    "succeed_statement",
    "update_charge_metadata",
]
