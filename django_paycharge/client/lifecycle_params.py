"""Request bodies of capture, refund, cancel and metadata update, validated before sending.

Each builder raises :class:`~django_paycharge.exceptions.InvalidParametersError`
naming every broken field, or returns the JSON body. Public because the
services and the DRF endpoints check input with the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .validation import (
    Checker,
    JSONScalar,
    invalid,
    validate_amount,
    validate_currency,
    validate_metadata,
)
from .vocabulary import REFUND_REASONS


def validate_refund_reason(value: Any, field: str = "reason") -> str:
    """One of the reasons a merchant may send: ``duplicate``, ``fraud``, ``customer_request``."""
    if not isinstance(value, str) or value not in REFUND_REASONS:
        raise invalid(field, "must be one of " + ", ".join(REFUND_REASONS))
    return value


def validate_message(value: Any, field: str = "message") -> str:
    """A non-empty note of printable text (line breaks allowed)."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or "\x00" in value
        or not value.replace("\n", " ").replace("\r", " ").replace("\t", " ").isprintable()
    ):
        raise invalid(field, "must be non-empty printable text")
    return value


#: Validators of the fields a capture or refund may carry.
FIELD_VALIDATORS = {
    "amount": validate_amount,
    "currency": validate_currency,
    "reason": validate_refund_reason,
    "message": validate_message,
    "metadata": validate_metadata,
}


def check_fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a caller gave (before defaults are filled in), validated and in the form
    sent; one error naming every bad field."""
    checker = Checker()
    checked = {name: checker.check(FIELD_VALIDATORS[name], v, name) for name, v in given.items()}
    checker.raise_if_any()
    return checked


def refund_body(
    *,
    amount: Any,
    currency: Any,
    reason: Any = None,
    message: Any = None,
    metadata: Any = None,
    checker: Checker | None = None,
) -> dict[str, Any]:
    """``{"amount", "currency", "reason"?, "message"?, "metadata"?}`` (the first two needed)."""
    checker = checker or Checker()
    body: dict[str, Any] = {
        "amount": checker.check(validate_amount, amount, "amount"),
        "currency": checker.check(validate_currency, currency, "currency"),
    }
    if reason is not None:
        body["reason"] = checker.check(validate_refund_reason, reason, "reason")
    if message is not None:
        body["message"] = checker.check(validate_message, message, "message")
    if metadata is not None:
        body["metadata"] = checker.check(validate_metadata, metadata, "metadata")
    checker.raise_if_any()
    return body


def capture_body(
    *, amount: Any = None, currency: Any = None, checker: Checker | None = None
) -> dict[str, Any] | None:
    """``None`` (capture everything authorized) or ``{"amount", "currency"}``.

    The gateway would default a missing currency to the charge's; we ask for
    it with every partial amount, so a capture never depends on a guess.
    """
    checker = checker or Checker()
    if amount is None and currency is None:
        checker.raise_if_any()  # an earlier error (the idempotency key) still counts
        return None
    body: dict[str, Any] = {}
    if amount is None:
        checker.fail("amount", "must be given with currency (or leave both out)")
    else:
        body["amount"] = checker.check(validate_amount, amount, "amount")
    if currency is None:
        checker.fail("currency", "must be given with amount")
    else:
        body["currency"] = checker.check(validate_currency, currency, "currency")
    checker.raise_if_any()
    return body


def metadata_body(
    metadata: Any, *, required: bool, checker: Checker | None = None
) -> dict[str, dict[str, JSONScalar]]:
    """``{"metadata": {...}}`` for a cancel (optional: ``{}``) or a charge update (required)."""
    checker = checker or Checker()
    if metadata is None:
        if required:
            checker.fail("metadata", "is required")
        checker.raise_if_any()
        return {}
    checked = checker.check(validate_metadata, metadata, "metadata")
    checker.raise_if_any()
    assert checked is not None
    return {"metadata": checked}
