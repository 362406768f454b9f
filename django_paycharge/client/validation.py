"""The spec's rules on request input, checked before anything is sent.

Each ``validate_*`` function takes a value and the field name to report,
returns the value in the form the gateway wants, and raises
:class:`~django_paycharge.exceptions.InvalidParametersError` with one
:class:`~django_paycharge.exceptions.FieldError` otherwise. They have no
Django import, so DRF serializers can call them and translate the error.
Field names are the spec's dotted names (``three_ds.mode``,
``client_metadata.ip_address``, ``redirect.endpoint``), not the Python
argument names.

:class:`Checker` runs several of them and raises one error listing every
broken field. Messages never repeat the rejected value (it may be personal
data).
"""

from __future__ import annotations

import ipaddress
import math
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, TypeVar
from urllib.parse import urlsplit

from babel.core import get_global
from babel.numbers import get_territory_currencies

from django_paycharge.exceptions import FieldError, InvalidParametersError

from .vocabulary import CURSOR_DIRECTIONS, THREE_DS_MODES

T = TypeVar("T")

LIMIT_MIN = 10
LIMIT_MAX = 100
IDEMPOTENCY_KEY_MAX = 255
#: The widest offsets in use (UTC-12:00 to UTC+14:00); PostgreSQL refuses 16 hours and more.
MAX_UTC_OFFSET = timedelta(hours=14)

JSONScalar = str | int | float | bool | None


def invalid(field: str, reason: str) -> InvalidParametersError:
    """An :class:`InvalidParametersError` for one field."""
    return InvalidParametersError(errors=[FieldError(field, reason)])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_uuid(value: Any, field: str) -> str:
    """A UUID (``uuid.UUID`` or its text), returned in canonical text form."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value))
        except ValueError:
            pass
    raise invalid(field, "must be a UUID")


def validate_limit(value: Any, field: str = "limit") -> int:
    """Page size: an integer from 10 to 100 (``True`` is not an integer here)."""
    if not _is_int(value) or not LIMIT_MIN <= value <= LIMIT_MAX:
        raise invalid(field, f"must be an integer from {LIMIT_MIN} to {LIMIT_MAX}")
    return int(value)


def validate_cursor_direction(value: Any, field: str = "cursor_direction") -> str:
    """``asc`` or ``desc``."""
    if value not in CURSOR_DIRECTIONS or not isinstance(value, str):
        raise invalid(field, "must be 'asc' or 'desc'")
    return str(value)


def validate_three_ds_mode(value: Any, field: str = "three_ds.mode") -> str:
    """One of ``normal``, ``require``, ``force``, ``skip``, ``if_available``, ``provided``."""
    if not isinstance(value, str) or value not in THREE_DS_MODES:
        raise invalid(field, "must be one of " + ", ".join(sorted(THREE_DS_MODES)))
    return value


def validate_ipv4(value: Any, field: str = "client_metadata.ip_address") -> str:
    """A dotted-quad IPv4 address (the spec allows no IPv6)."""
    if isinstance(value, ipaddress.IPv4Address):
        return str(value)
    if isinstance(value, str):
        try:
            return str(ipaddress.IPv4Address(value))
        except ValueError:
            pass
    raise invalid(field, "must be an IPv4 address")


def validate_http_url(value: Any, field: str) -> str:
    """An absolute ``http``/``https`` URL with a host; its own query string is allowed."""
    if isinstance(value, str) and value.isprintable() and " " not in value:
        try:
            parts = urlsplit(value)
            # .port raises ValueError on a malformed port such as "host:abc".
            ok = (
                parts.scheme in ("http", "https")
                and bool(parts.hostname)
                and (parts.port is None or parts.port > 0)
            )
        except ValueError:
            ok = False
        if ok:
            return value
    raise invalid(field, "must be an absolute http or https URL with a host")


def validate_amount(value: Any, field: str = "amount") -> int:
    """A positive integer in minor units (no ``bool``, no ``float``, no ``Decimal``)."""
    if not _is_int(value) or value <= 0:
        raise invalid(field, "must be a positive integer in the currency's smallest unit")
    return int(value)


@cache
def iso_4217_currencies() -> frozenset[str]:
    """The ISO-4217 codes in use today, from Babel's CLDR data (kept up to date by Babel).

    A code counts when some territory uses it now, as legal tender or as a fund
    code (``CLF``, ``UYI``...); withdrawn codes (``DEM``) and unassigned
    ones (``XYZ``) are refused.
    """
    today = date.today()
    codes: set[str] = set()
    for territory in get_global("territory_currencies"):
        codes.update(get_territory_currencies(territory, today, tender=True, non_tender=True))
    return frozenset(codes)


def validate_currency(value: Any, field: str = "currency") -> str:
    """An ISO-4217 code in use (``JPY``); lowercase is accepted and upper-cased, ``yen`` is not."""
    if isinstance(value, str) and len(value) == 3 and value.isascii():
        code = value.upper()
        if code in iso_4217_currencies():
            return code
    raise invalid(field, "must be an ISO-4217 currency code in use, such as 'JPY'")


def validate_metadata(value: Any, field: str = "metadata") -> dict[str, JSONScalar]:
    """A flat JSON object: string keys; string, number, boolean or null values.

    ``Decimal`` values are sent as their text so no digit is lost (a JSON
    number would go through ``float``); NaN and infinities are refused.
    """
    if not isinstance(value, Mapping):
        raise invalid(field, "must be a JSON object (a dict)")
    result: dict[str, JSONScalar] = {}
    errors: list[FieldError] = []
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            errors.append(FieldError(field, "keys must be non-empty strings"))
            continue
        name = f"{field}.{key}"
        if item is None or isinstance(item, str | bool | int):
            result[key] = item
        elif isinstance(item, float):
            if math.isfinite(item):
                result[key] = item
            else:
                errors.append(FieldError(name, "must be a finite number"))
        elif isinstance(item, Decimal):
            if item.is_finite():
                result[key] = str(item)
            else:
                errors.append(FieldError(name, "must be a finite number"))
        else:
            errors.append(
                FieldError(name, "must be a string, number, boolean or null (metadata is flat)")
            )
    if errors:
        raise InvalidParametersError(errors=errors)
    return result


def validate_merchant_transaction_id(value: Any, field: str = "merchant_transaction_id") -> str:
    """A non-empty string. Brand-specific limits (32 alphanumerics for some
    wallets) are left to the gateway: the client cannot know the brand."""
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise invalid(field, "must be a non-empty string of printable characters")
    return value


def validate_bool(value: Any, field: str) -> bool:
    """``True`` or ``False``; no truthy stand-ins."""
    if not isinstance(value, bool):
        raise invalid(field, "must be true or false")
    return value


def validate_aware_datetime(value: Any, field: str) -> str:
    """An aware ``datetime``, or ISO-8601 text with an offset; returned as ISO-8601 text."""
    parsed: datetime | None = None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
    if parsed is None or parsed.utcoffset() is None:
        raise invalid(field, "must be a time with a UTC offset (an aware datetime)")
    if abs(parsed.utcoffset() or timedelta()) > MAX_UTC_OFFSET:
        raise invalid(field, "must have a UTC offset between -14:00 and +14:00")
    return parsed.isoformat()


def validate_idempotency_key(value: Any, field: str = "idempotency_key") -> str:
    """Printable ASCII without spaces, 1 to 255 characters (it travels in a header)."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if (
        isinstance(value, str)
        and 0 < len(value) <= IDEMPOTENCY_KEY_MAX
        and value.isascii()
        and value.isprintable()
        and " " not in value
    ):
        return value
    raise invalid(field, "must be 1 to 255 printable ASCII characters without spaces")


def validate_non_negative_int(value: Any, field: str) -> int:
    """An integer >= 0 (amount filters are in minor units)."""
    if not _is_int(value) or value < 0:
        raise invalid(field, "must be a non-negative integer")
    return int(value)


def validate_query_value(value: Any, field: str) -> str:
    """Any other filter: text, integer, boolean, Decimal, UUID or aware datetime."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | uuid.UUID):
        return str(value)
    if isinstance(value, Decimal) and value.is_finite():
        return str(value)
    if isinstance(value, datetime):
        return validate_aware_datetime(value, field)
    raise invalid(field, "must be a string, integer, boolean, UUID or aware datetime")


class Checker:
    """Runs validators and collects their errors, so one exception names every broken field."""

    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def check(self, validator: Callable[[Any, str], T], value: Any, field: str) -> T | None:
        """``validator(value, field)``, or ``None`` after recording its error."""
        try:
            return validator(value, field)
        except InvalidParametersError as exc:
            self.errors.extend(exc.errors)
            return None

    def fail(self, field: str, reason: str) -> None:
        """Record an error found by the caller itself."""
        self.errors.append(FieldError(field, reason))

    def raise_if_any(self) -> None:
        """Raise one :class:`InvalidParametersError` listing every recorded error."""
        if self.errors:
            raise InvalidParametersError(errors=self.errors)


def path_ids(**values: Any) -> list[str]:
    """Path ids as canonical UUID text; a UUID check also keeps ``/`` out of paths."""
    checker = Checker()
    result = [checker.check(validate_uuid, v, name) for name, v in values.items()]
    checker.raise_if_any()
    return [r for r in result if r is not None]


def request_key(checker: Checker, idempotency_key: Any) -> str:
    """The caller's idempotency key, checked (its error recorded in ``checker``), or a new UUID4."""
    if idempotency_key is None:
        return str(uuid.uuid4())
    return checker.check(validate_idempotency_key, idempotency_key, "idempotency_key") or ""
