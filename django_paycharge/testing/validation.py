"""Validation of request bodies, collecting every field error into one 400 answer.

Only the checks that need nothing but the body (and the token or charge it
names) live here; the rules across records (a refund's total, one cancel at
a time) are the state's.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..client.token_vocabulary import (
    RECURRING_TOKEN_TYPE,
    TOKEN_TYPES,
    USAGE_LIMIT_NOT_APPLICABLE,
    USAGE_LIMITS,
)
from ..client.vocabulary import (
    CALL_METHODS,
    PAYMENT_TYPES,
    REFUND_REASONS,
    THREE_DS_MODES,
    TRIGGERS,
)
from .basics import (
    CROSS_BORDER_BRANDS,
    Json,
    card_brand,
    is_http_url,
    is_ipv4,
    now,
    parse_iso,
    validation_error,
)
from .records import TransactionToken

_CURRENCY = re.compile(r"[A-Za-z]{3}")
_ALNUM_32 = re.compile(r"[A-Za-z0-9]{1,32}")
_CARD_NUMBER = re.compile(r"\d{12,19}")
_SCALARS = (str, int, float, bool, type(None))


def is_uuid(value: Any) -> bool:
    """True for a string holding a UUID."""
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def is_int(value: Any) -> TypeGuard[int]:
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_flat_object(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, _SCALARS) for v in value.values())


@dataclass(slots=True)
class ChargeRequest:
    """The fields of ``POST /charges`` after the token-independent checks."""

    token_id: str
    amount: int
    currency: str
    capture: bool
    capture_at: str | None
    merchant_transaction_id: str | None
    metadata: Json
    redirect_endpoint: str | None
    three_ds: Json | None
    ip_address: str | None


def parse_charge(body: Json) -> ChargeRequest:
    """Check every field of a charge request that does not depend on its token."""
    errors: list[tuple[str, str]] = []
    token_id = body.get("transaction_token_id")
    if not is_uuid(token_id):
        reason = "REQUIRED_VALUE" if token_id is None else "INVALID_FORMAT_UUID"
        errors.append(("transaction_token_id", reason))
    amount, currency = _money(body, errors, _CURRENCY.fullmatch)
    capture = body.get("capture", True)
    if not isinstance(capture, bool):
        errors.append(("capture", "MUST_BE_BOOLEAN"))
    capture_at = body.get("capture_at")
    if capture_at is not None and parse_iso(capture_at) is None:
        errors.append(("capture_at", "INVALID_FORMAT_DATE"))
    mtid = body.get("merchant_transaction_id")
    if mtid is not None and (not isinstance(mtid, str) or not 0 < len(mtid) <= 100):
        errors.append(("merchant_transaction_id", "INVALID_FORMAT"))
    metadata = _metadata(body.get("metadata", {}), errors)
    ip_address, endpoint, three_ds = _charge_objects(body, errors)
    if errors:
        raise validation_error(errors)
    return ChargeRequest(
        token_id=str(token_id),
        amount=amount,
        currency=currency.upper(),
        capture=bool(capture),
        capture_at=capture_at,
        merchant_transaction_id=mtid,
        metadata=metadata,
        redirect_endpoint=endpoint,
        three_ds=three_ds,
        ip_address=ip_address,
    )


def _charge_objects(
    body: Json, errors: list[tuple[str, str]]
) -> tuple[str | None, str | None, Json | None]:
    """The nested objects of a charge request: client IP, redirect and 3-D Secure."""
    ip_address = _sub(body, "client_metadata", "ip_address", errors)
    if ip_address is not None and not is_ipv4(ip_address):
        errors.append(("client_metadata.ip_address", "INVALID_FORMAT_IPV4"))
    endpoint = _sub(body, "redirect", "endpoint", errors)
    if endpoint is not None and not is_http_url(endpoint):
        errors.append(("redirect.endpoint", "INVALID_FORMAT_URL"))
    if body.get("three_ds") is None:
        return ip_address, endpoint, None
    tds_endpoint = _sub(body, "three_ds", "redirect_endpoint", errors)
    if tds_endpoint is not None and not is_http_url(tds_endpoint):
        errors.append(("three_ds.redirect_endpoint", "INVALID_FORMAT_URL"))
    mode = _sub(body, "three_ds", "mode", errors)
    if mode is not None and mode not in THREE_DS_MODES:
        errors.append(("three_ds.mode", "INVALID_ENUM_VALUE"))
    return ip_address, endpoint, {"redirect_endpoint": tds_endpoint, "mode": mode or "normal"}


def _money(
    body: Json, errors: list[tuple[str, str]], currency_ok: Callable[[str], object]
) -> tuple[int, str]:
    """``amount`` (a positive integer) and ``currency``, reporting what is wrong."""
    amount, currency = body.get("amount"), body.get("currency")
    if not is_int(amount) or amount <= 0:
        errors.append(("amount", "MUST_BE_POSITIVE_INTEGER"))
    if not isinstance(currency, str) or not currency_ok(currency):
        errors.append(("currency", "INVALID_FORMAT_CURRENCY"))
    return (amount if is_int(amount) else 0), (currency if isinstance(currency, str) else "")


def _metadata(value: Any, errors: list[tuple[str, str]]) -> Json:
    """``metadata`` (absent or null: empty), which must be a flat object."""
    if value is None:
        value = {}
    if not is_flat_object(value):
        errors.append(("metadata", "MUST_BE_FLAT_OBJECT"))
        return {}
    return dict(value)


def check_charge_against_token(request: ChargeRequest, token: TransactionToken) -> None:
    """The rules that depend on the token's payment type and brand."""
    errors: list[tuple[str, str]] = []
    if not request.capture and token.payment_type != "card":
        errors.append(("capture", "CAPTURE_ONLY_FOR_CARD"))
    mtid = request.merchant_transaction_id
    if mtid is not None and token.brand in CROSS_BORDER_BRANDS and not _ALNUM_32.fullmatch(mtid):
        errors.append(("merchant_transaction_id", "MAX_32_ALPHANUMERIC_CHARACTERS"))
    if errors:
        raise validation_error(errors)


def _sub(body: Json, outer: str, inner: str, errors: list[tuple[str, str]]) -> Any:
    """``body[outer][inner]``, reporting a non-object ``outer`` once."""
    value = body.get(outer)
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.append((outer, "MUST_BE_OBJECT"))
        return None
    return value.get(inner)


@dataclass(slots=True)
class TokenRequest:
    """The fields of ``POST /tokens`` after validation."""

    payment_type: str
    type: str
    email: str | None
    metadata: Json
    data: Json
    card_number: str | None
    usage_limit: str | None = None


def parse_token(body: Json) -> TokenRequest:
    """Validate a transaction-token request; card data is reduced to what may be echoed."""
    errors: list[tuple[str, str]] = []
    payment_type = body.get("payment_type")
    if payment_type not in PAYMENT_TYPES:
        errors.append(("payment_type", "INVALID_ENUM_VALUE"))
    token_type = body.get("type", "one_time")
    if token_type not in TOKEN_TYPES:
        errors.append(("type", "INVALID_ENUM_VALUE"))
    usage_limit = body.get("usage_limit")
    if usage_limit is not None and usage_limit not in USAGE_LIMITS:
        errors.append(("usage_limit", "INVALID_ENUM_VALUE"))
    elif usage_limit is not None and token_type != RECURRING_TOKEN_TYPE:
        errors.append(("usage_limit", USAGE_LIMIT_NOT_APPLICABLE))
    email = body.get("email")
    if email is not None and (not isinstance(email, str) or "@" not in email):
        errors.append(("email", "INVALID_FORMAT_EMAIL"))
    metadata = _metadata(body.get("metadata") or {}, errors)
    raw = body.get("data") or {}
    if not isinstance(raw, dict):
        errors.append(("data", "MUST_BE_OBJECT"))
        raw = {}
    card_number: str | None = None
    if payment_type == "card":
        card_number = str(raw.get("card_number", "")).replace(" ", "")
        data = _card_data(raw, card_number, errors)
    else:
        data = _other_data(payment_type, raw, errors)
    if errors:
        raise validation_error(errors)
    return TokenRequest(
        str(payment_type), str(token_type), email, metadata, data, card_number, usage_limit
    )


def _other_data(payment_type: Any, raw: Json, errors: list[tuple[str, str]]) -> Json:
    """The ``data`` of an online, konbini or bank transfer token."""
    if payment_type == "online":
        brand = raw.get("brand")
        call_method = raw.get("call_method", "http_post")
        if not isinstance(brand, str) or not brand:
            errors.append(("data.brand", "REQUIRED_VALUE"))
        if call_method not in CALL_METHODS:
            errors.append(("data.call_method", "INVALID_ENUM_VALUE"))
        return {**raw, "brand": brand, "call_method": call_method}
    if payment_type == "konbini":
        for name in ("customer_name", "convenience_store"):
            if not isinstance(raw.get(name), str) or not raw.get(name):
                errors.append((f"data.{name}", "REQUIRED_VALUE"))
    return dict(raw)


def _has_expired(month: int, year: int) -> bool:
    # A card is valid until the end of its expiry month.
    today = now()
    return (year, month) < (today.year, today.month)


def _card_data(raw: Json, number: str, errors: list[tuple[str, str]]) -> Json:
    if not _CARD_NUMBER.fullmatch(number):
        errors.append(("data.card_number", "INVALID_CARD_NUMBER"))
    month, year = raw.get("exp_month"), raw.get("exp_year")
    if not is_int(month) or not 1 <= month <= 12:
        errors.append(("data.exp_month", "INVALID_FORMAT"))
    if not is_int(year) or year < 2000:
        errors.append(("data.exp_year", "INVALID_FORMAT"))
    elif is_int(month) and 1 <= month <= 12 and _has_expired(month, year):
        errors.append(("data.exp_year", "CARD_EXPIRED"))
    cvv = raw.get("cvv")
    if cvv is not None and not re.fullmatch(r"\d{3,4}", str(cvv)):
        errors.append(("data.cvv", "INVALID_FORMAT"))
    data = {
        "cardholder": raw.get("cardholder"),
        "exp_month": month,
        "exp_year": year,
        "card_bin": number[:6],
        "last_four": number[-4:],
        "brand": card_brand(number),
    }
    three_ds = raw.get("three_ds")
    if three_ds is not None:
        if not isinstance(three_ds, dict) or not isinstance(three_ds.get("enabled"), bool):
            errors.append(("data.three_ds.enabled", "MUST_BE_BOOLEAN"))
        elif three_ds["enabled"]:
            # The fake passes the token's own 3-D Secure at once (no token challenge).
            data["three_ds"] = {"enabled": True, "status": "successful"}
    return data


def parse_webhook(body: Json, *, partial: bool = False) -> Json:
    """Validate a webhook configuration (all fields for create, any subset for update)."""
    errors: list[tuple[str, str]] = []
    out: Json = {}
    if "triggers" in body or not partial:
        triggers = body.get("triggers")
        if (
            not isinstance(triggers, list)
            or not triggers
            or not all(t in TRIGGERS for t in triggers)
        ):
            errors.append(("triggers", "INVALID_TRIGGERS"))
        out["triggers"] = triggers
    if "url" in body or not partial:
        if not is_http_url(body.get("url")):
            errors.append(("url", "INVALID_FORMAT_URL"))
        out["url"] = body.get("url")
    if "auth_token" in body:
        if body["auth_token"] is not None and not isinstance(body["auth_token"], str):
            errors.append(("auth_token", "MUST_BE_STRING"))
        out["auth_token"] = body["auth_token"]
    if "active" in body or not partial:
        active = body.get("active", True)
        if not isinstance(active, bool):
            errors.append(("active", "MUST_BE_BOOLEAN"))
        out["active"] = active
    if errors:
        raise validation_error(errors)
    return out


# -- the rest of a charge's life ---------------------------------------------------------------


@dataclass(slots=True)
class RefundRequest:
    """The fields of ``POST .../refunds`` after the checks that need no charge."""

    amount: int
    currency: str
    reason: str | None
    message: str | None
    metadata: Json


def parse_refund(body: Json) -> RefundRequest:
    """Validate a refund request (the charge's own rules are checked by the state)."""
    errors: list[tuple[str, str]] = []
    amount, currency = _money(body, errors, lambda value: len(value) == 3)
    reason, message = body.get("reason"), body.get("message")
    if reason is not None and reason not in REFUND_REASONS:
        errors.append(("reason", "INVALID_ENUM_VALUE"))
    if message is not None and not isinstance(message, str):
        errors.append(("message", "MUST_BE_STRING"))
    metadata = _metadata(body.get("metadata") or {}, errors)
    if errors:
        raise validation_error(errors)
    return RefundRequest(amount, currency.upper(), reason, message, metadata)


def parse_metadata(body: Json, *, required: bool = False) -> Json:
    """The ``metadata`` of a cancel (optional) or of a charge update (``required``)."""
    value = body.get("metadata")
    if required and not isinstance(value, dict):
        raise validation_error([("metadata", "MUST_BE_FLAT_OBJECT")])
    errors: list[tuple[str, str]] = []
    metadata = _metadata(value or {}, errors)
    if errors:
        raise validation_error(errors)
    return metadata


def parse_capture(body: Json) -> tuple[int | None, str | None]:
    """``(amount, currency)`` of a capture (None: all of it); the charge's rules are the state's."""
    amount, currency = body.get("amount"), body.get("currency")
    errors: list[tuple[str, str]] = []
    if amount is not None and (not is_int(amount) or amount <= 0):
        errors.append(("amount", "MUST_BE_POSITIVE_INTEGER"))
    if currency is not None and not (isinstance(currency, str) and _CURRENCY.fullmatch(currency)):
        errors.append(("currency", "INVALID_FORMAT_CURRENCY"))
    if errors:
        raise validation_error(errors)
    return (int(amount) if amount is not None else None, currency.upper() if currency else None)
