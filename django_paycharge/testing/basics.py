"""What every part of the fake shares: test credentials and cards, the clock, amounts, errors.

The gateway's own vocabulary (statuses, payment types, modes, triggers...) is
not repeated here: the fake imports it from :mod:`django_paycharge.client.vocabulary`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from ..client.validation import validate_http_url, validate_ipv4
from ..client.vocabulary import STATUS_ERROR_CODES, VALIDATION_ERROR
from ..exceptions import InvalidParametersError
from ..money import currency_exponent, to_major

# The defaults match tests/settings.py's PAYCHARGE dict so the suite and the fake agree.
TEST_BASE_URL = "https://fake-gateway.paycharge.test"
TEST_SECRET = "test-secret-0123456789"  # noqa: S105 - a published test credential
TEST_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJ0ZXN0LWFwcCIsImlzcyI6InBheWNoYXJnZS1mYWtlIn0."
    "c2lnbmF0dXJlLW9mLXRoZS10ZXN0LXRva2Vu"
)
# A browser app token's JWT (the payment widget's): no secret, made for pages.
TEST_WIDGET_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJ0ZXN0LXdpZGdldCIsImlzcyI6InBheWNoYXJnZS1mYWtlIn0."
    "c2lnbmF0dXJlLW9mLXRoZS13aWRnZXQtdG9rZW4"
)
TEST_STORE_ID = "11111111-1111-4111-8111-111111111111"
TEST_MERCHANT_ID = "22222222-2222-4222-8222-222222222222"
PLATFORM_ID = "33333333-3333-4333-8333-333333333333"

#: Card numbers with a fixed outcome; any other number succeeds.
CARD_DECLINED = "4000000000000002"
CARD_INSUFFICIENT_FUNDS = "4000000000009995"
CARD_SUCCESS = "4242424242424242"
#: A card whose issuer always asks for a 3-D Secure challenge (unless ``three_ds.mode=skip``).
CARD_THREE_DS = "4000000000003220"
DECLINES: dict[str, tuple[int, str]] = {
    CARD_DECLINED: (306, "card declined"),
    CARD_INSUFFICIENT_FUNDS: (330, "insufficient funds"),
}

# Brands of the cross-border wallet provider whose merchant_transaction_id is limited.
CROSS_BORDER_BRANDS = frozenset({"alipay_online", "alipay_plus_online", "wechat_online"})
FEE_PER_MILLE = 36  # 3.6 %, rounded down in minor units

Json = dict[str, Any]


class ApiError(Exception):
    """An answer in the gateway's error format, raised anywhere below the router."""

    def __init__(
        self,
        status: int,
        code: str | None = None,
        errors: list[tuple[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.code = code or STATUS_ERROR_CODES.get(status, "ERROR")
        self.errors = errors or []
        self.headers = headers or {}
        super().__init__(f"{status} {self.code} {self.errors}")

    def body(self) -> Json:
        """The JSON body the gateway sends for this error (``{}`` for a 429, as documented)."""
        if self.status == 429:
            return {}
        return {
            "status": "error",
            "code": self.code,
            "errors": [{"field": f, "reason": r} for f, r in self.errors],
        }


def validation_error(errors: list[tuple[str, str]]) -> ApiError:
    """A 400 ``VALIDATION_ERROR`` naming the fields in ``errors``."""
    return ApiError(400, VALIDATION_ERROR, errors)


def failure(code: int, message: str, detail: str = "") -> Json:
    """The ``error`` object of a failed charge, refund or cancel."""
    return {"code": code, "message": message, "detail": detail or message}


def now() -> dt.datetime:
    """The current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


def iso(value: dt.datetime) -> str:
    """ISO-8601 in UTC with microseconds and a ``Z``, as the gateway writes times."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(value: Any) -> dt.datetime | None:
    """An aware datetime from an ISO-8601 string (naive means UTC), or None if invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def formatted(amount: int | None, currency: str | None) -> int | float | None:
    """An amount in major units, with the currency's ISO-4217 decimals (a JSON number).

    JPY 1000 -> 1000, USD 1000 -> 10.0, KWD 1234567 -> 1234.567: the same
    exponents the mirror uses (:mod:`django_paycharge.money`).
    """
    if amount is None or currency is None:
        return None
    if currency_exponent(currency) == 0:
        return amount
    return float(to_major(amount, currency))


def formatted_text(amount: int | None, currency: str | None) -> str | None:
    """The same amount as text (the SDK types ``fee_amount_formatted`` as a string)."""
    if amount is None or currency is None:
        return None
    return str(to_major(amount, currency))


def fee_for(amount: int) -> int:
    """The fake's processing fee: 3.6 % of the amount, rounded down."""
    return amount * FEE_PER_MILLE // 1000


def is_http_url(value: Any) -> bool:
    """True for an absolute http(s) URL with a host (the client's rule, which is the gateway's)."""
    return _accepted(validate_http_url, value)


def is_ipv4(value: Any) -> bool:
    """True for a dotted-quad IPv4 address."""
    return _accepted(validate_ipv4, value)


def _accepted(validator: Callable[[Any, str], Any], value: Any) -> bool:
    try:
        validator(value, "value")
    except InvalidParametersError:
        return False
    return True


def make_jwt(claims: dict[str, Any]) -> str:
    """A well-formed (unsigned, dummy signature) JWT carrying ``claims``, for extra app tokens."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

    header = json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode()
    payload = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode()
    return f"{part(header)}.{part(payload)}.{part(b'fake-signature')}"


def card_brand(number: str) -> str:
    """The card brand guessed from the number's prefix, as the gateway reports it."""
    if number.startswith("4"):
        return "visa"
    if number[:2] in {"51", "52", "53", "54", "55"} or number[:1] == "2":
        return "mastercard"
    if number[:2] in {"34", "37"}:
        return "american_express"
    if number[:2] == "35":
        return "jcb"
    return "unknown"
