"""Parse refunds, cancels, capture answers and 3-D Secure issuer tokens, tolerantly.

The same tolerant reader as charges, with the same readers of
:mod:`.parsing`: only the ``id`` of a refund or cancel is required (without it
the record cannot be stored). Any other field is typed when it can be
(``"300"`` is 300, a number where text belongs is its text) and ``None``
otherwise; ``raw`` keeps what the gateway sent.
"""

from __future__ import annotations

from typing import Any

from .lifecycle_types import Cancel, Capture, ChargeExpiry, Refund, ThreeDSIssuerToken
from .parsing import (
    _charge_error,
    _datetime,
    _decimal,
    _dict,
    _int,
    _object,
    _required_uuid,
    _text,
    _uuid,
)
from .types import JSONObject

__all__ = [
    "parse_cancel",
    "parse_capture",
    "parse_charge_expiry",
    "parse_refund",
    "parse_three_ds_issuer_token",
]


def _child_fields(d: JSONObject) -> dict[str, Any]:
    """The fields refunds and cancels share."""
    g = d.get
    error = g("error")
    return {
        "id": _required_uuid(g("id"), "id"),
        "store_id": _uuid(g("store_id")),
        "charge_id": _uuid(g("charge_id")),
        "status": _text(g("status")),
        "error": _charge_error(error) if type(error) is dict else None,
        "metadata": _dict(g("metadata")),
        "mode": _text(g("mode")),
        "created_on": _datetime(g("created_on")),
        "updated_on": _datetime(g("updated_on")),
        "raw": d,
    }


def parse_refund(value: Any) -> Refund:
    """A :class:`Refund` from the decoded JSON of a refund (only ``id`` is required)."""
    d = _object(value, "the refund")
    g = d.get
    return Refund(
        **_child_fields(d),
        amount=_int(g("amount")),
        currency=_text(g("currency")),
        amount_formatted=_decimal(g("amount_formatted")),
        reason=_text(g("reason")),
        message=_text(g("message")),
    )


def parse_cancel(value: Any) -> Cancel:
    """A :class:`Cancel` from the decoded JSON of a cancel (only ``id`` is required)."""
    return Cancel(**_child_fields(_object(value, "the cancel")))


def parse_capture(value: Any) -> Capture:
    """The capture answer: any JSON object (the SDK documents an empty one); null is ``{}``."""
    d = {} if value is None else _object(value, "the capture answer")
    return Capture(amount=_int(d.get("amount")), currency=_text(d.get("currency")), raw=d)


def parse_three_ds_issuer_token(value: Any) -> ThreeDSIssuerToken:
    """A :class:`ThreeDSIssuerToken` from the decoded JSON of a 3-D Secure issuer token."""
    d = _object(value, "the 3-D Secure issuer token")
    g = d.get
    return ThreeDSIssuerToken(
        payment_type=_text(g("payment_type")),
        issuer_token=_text(g("issuer_token")),
        call_method=_text(g("call_method")),
        payload=_dict(g("payload")),
        content_type=_text(g("content_type")),
        raw=d,
    )


def parse_charge_expiry(value: Any) -> ChargeExpiry:
    """A :class:`ChargeExpiry` from the decoded JSON of a charge's latest expiry."""
    d = _object(value, "the charge's expiry")
    g = d.get
    return ChargeExpiry(
        expiration_date=_datetime(g("expiration_date")),
        extension_count=_int(g("extension_count")),
        raw=d,
    )
