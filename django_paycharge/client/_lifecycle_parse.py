"""Parse refunds, cancels, capture answers and 3-D Secure issuer tokens, tolerantly.

Only the ``id`` of a refund or cancel is required (without it the record
cannot be stored). Any other field that is missing or has a shape we cannot
type becomes ``None``; the value itself stays in ``raw``, so nothing the
gateway sent is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._parse import (
    _datetime,
    _decimal,
    _dict,
    _int,
    _object,
    _required_uuid,
    _uuid,
)
from .lifecycle_types import Cancel, Capture, Refund, ThreeDSIssuerToken
from .types import ChargeError, JSONObject

T = TypeVar("T")

__all__ = ["parse_cancel", "parse_capture", "parse_refund", "parse_three_ds_issuer_token"]


def _soft(parse: Callable[[Any], T | None], value: Any, name: str) -> T | None:
    # The shared readers now answer None themselves for a value they cannot type.
    return parse(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _error(value: Any) -> ChargeError | None:
    if type(value) is not dict:
        return None
    return ChargeError(
        code=_soft(_int, value.get("code"), "error.code"),
        message=_text(value.get("message")),
        detail=_text(value.get("detail")),
        raw=value,
    )


def _child_fields(d: JSONObject) -> dict[str, Any]:
    """The fields refunds and cancels share."""
    g = d.get
    return {
        "id": _required_uuid(g("id"), "id"),
        "store_id": _soft(_uuid, g("store_id"), "store_id"),
        "charge_id": _soft(_uuid, g("charge_id"), "charge_id"),
        "status": _text(g("status")),
        "error": _error(g("error")),
        "metadata": _soft(_dict, g("metadata"), "metadata"),
        "mode": _text(g("mode")),
        "created_on": _soft(_datetime, g("created_on"), "created_on"),
        "updated_on": _soft(_datetime, g("updated_on"), "updated_on"),
        "raw": d,
    }


def parse_refund(value: Any) -> Refund:
    """A :class:`Refund` from the decoded JSON of a refund."""
    d = _object(value, "the refund")
    g = d.get
    return Refund(
        **_child_fields(d),
        amount=_soft(_int, g("amount"), "amount"),
        currency=_text(g("currency")),
        amount_formatted=_soft(_decimal, g("amount_formatted"), "amount_formatted"),
        reason=_text(g("reason")),
        message=_text(g("message")),
    )


def parse_cancel(value: Any) -> Cancel:
    """A :class:`Cancel` from the decoded JSON of a cancel."""
    return Cancel(**_child_fields(_object(value, "the cancel")))


def parse_capture(value: Any) -> Capture:
    """The capture answer: any JSON object (the SDK documents an empty one); null is ``{}``."""
    d = {} if value is None else _object(value, "the capture answer")
    return Capture(
        amount=_soft(_int, d.get("amount"), "amount"),
        currency=_text(d.get("currency")),
        raw=d,
    )


def parse_three_ds_issuer_token(value: Any) -> ThreeDSIssuerToken:
    """A :class:`ThreeDSIssuerToken` from the decoded JSON of a 3-D Secure issuer token."""
    d = _object(value, "the 3-D Secure issuer token")
    g = d.get
    return ThreeDSIssuerToken(
        payment_type=_text(g("payment_type")),
        issuer_token=_text(g("issuer_token")),
        call_method=_text(g("call_method")),
        payload=_soft(_dict, g("payload"), "payload"),
        content_type=_text(g("content_type")),
        raw=d,
    )
