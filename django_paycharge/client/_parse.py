"""Turn decoded JSON (floats already ``Decimal``) into the typed results.

Written as flat functions with one ``dict.get`` per field: list pages are
parsed item by item, and per-field indirection (descriptors, schemas) is what
makes generated SDKs slow.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar
from uuid import UUID

from .types import (
    Charge,
    ChargeError,
    ChargeRedirect,
    IssuerToken,
    JSONObject,
    Page,
    ThreeDS,
    TransactionToken,
    WebhookConfiguration,
)

T = TypeVar("T")


class ShapeError(ValueError):
    """A 2xx body does not have the expected shape; the transport turns it into
    :class:`~django_paycharge.exceptions.InvalidResponseError`."""


def _object(value: Any, what: str) -> JSONObject:
    if type(value) is not dict:
        raise ShapeError(f"{what} is not a JSON object")
    return value


def _uuid(value: Any, name: str) -> UUID | None:
    if value is None:
        return None
    try:
        return UUID(value)
    except (TypeError, ValueError, AttributeError):
        raise ShapeError(f"field {name!r} is not a UUID") from None


def _required_uuid(value: Any, name: str) -> UUID:
    if value is None:
        raise ShapeError(f"field {name!r} is missing")
    result = _uuid(value, name)
    assert result is not None
    return result


def _int(value: Any, name: str) -> int | None:
    if value is None or type(value) is int:
        return value
    # Decimal only when the gateway wrote "1000.0": still a whole amount.
    if type(value) is Decimal and value == value.to_integral_value():
        return int(value)
    raise ShapeError(f"field {name!r} is not an integer")


def _decimal(value: Any, name: str) -> Decimal | None:
    if value is None or type(value) is Decimal:
        return value
    if type(value) is int:
        return Decimal(value)
    if type(value) is str:
        try:
            result = Decimal(value)
        except InvalidOperation:
            pass
        else:
            if result.is_finite():
                return result
    raise ShapeError(f"field {name!r} is not a number")


def _datetime(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        result = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ShapeError(f"field {name!r} is not an ISO-8601 time") from None
    # The spec gives gateway times in UTC; a value without an offset is UTC.
    return result if result.tzinfo is not None else result.replace(tzinfo=UTC)


def _bool(value: Any, name: str) -> bool | None:
    if value is None or type(value) is bool:
        return value
    raise ShapeError(f"field {name!r} is not a boolean")


def _dict(value: Any, name: str) -> JSONObject | None:
    if value is None or type(value) is dict:
        return value
    raise ShapeError(f"field {name!r} is not a JSON object")


def parse_charge(value: Any) -> Charge:
    """A :class:`Charge` from the decoded JSON of a charge."""
    d = _object(value, "the charge")
    g = d.get
    error = g("error")
    redirect = g("redirect")
    three_ds = g("three_ds")
    return Charge(
        id=_required_uuid(g("id"), "id"),
        store_id=_uuid(g("store_id"), "store_id"),
        transaction_token_id=_uuid(g("transaction_token_id"), "transaction_token_id"),
        transaction_token_type=g("transaction_token_type"),
        subscription_id=_uuid(g("subscription_id"), "subscription_id"),
        merchant_transaction_id=g("merchant_transaction_id"),
        requested_amount=_int(g("requested_amount"), "requested_amount"),
        requested_currency=g("requested_currency"),
        requested_amount_formatted=_decimal(
            g("requested_amount_formatted"), "requested_amount_formatted"
        ),
        charged_amount=_int(g("charged_amount"), "charged_amount"),
        charged_currency=g("charged_currency"),
        charged_amount_formatted=_decimal(
            g("charged_amount_formatted"), "charged_amount_formatted"
        ),
        fee_amount=_int(g("fee_amount"), "fee_amount"),
        fee_currency=g("fee_currency"),
        fee_amount_formatted=_decimal(g("fee_amount_formatted"), "fee_amount_formatted"),
        only_direct_currency=_bool(g("only_direct_currency"), "only_direct_currency"),
        capture_at=_datetime(g("capture_at"), "capture_at"),
        descriptor=g("descriptor"),
        descriptor_phone_number=g("descriptor_phone_number"),
        status=g("status"),
        error=None if error is None else _charge_error(error),
        metadata=_dict(g("metadata"), "metadata"),
        mode=g("mode"),
        created_on=_datetime(g("created_on"), "created_on"),
        redirect=None if redirect is None else _redirect(redirect),
        merchant_name=g("merchant_name"),
        store_name=g("store_name"),
        three_ds=None if three_ds is None else _three_ds(three_ds),
        raw=d,
    )


def _charge_error(value: Any) -> ChargeError:
    d = _object(value, "field 'error'")
    return ChargeError(
        code=_int(d.get("code"), "error.code"),
        message=d.get("message"),
        detail=d.get("detail"),
        raw=d,
    )


def _redirect(value: Any) -> ChargeRedirect:
    d = _object(value, "field 'redirect'")
    return ChargeRedirect(
        endpoint=d.get("endpoint"),
        redirect_id=_uuid(d.get("redirect_id"), "redirect.redirect_id"),
        raw=d,
    )


def _three_ds(value: Any) -> ThreeDS:
    d = _object(value, "field 'three_ds'")
    return ThreeDS(redirect_endpoint=d.get("redirect_endpoint"), mode=d.get("mode"), raw=d)


def parse_issuer_token(value: Any) -> IssuerToken:
    """An :class:`IssuerToken` from the decoded JSON of an issuer token."""
    d = _object(value, "the issuer token")
    g = d.get
    return IssuerToken(
        payment_type=g("payment_type"),
        issuer_token=g("issuer_token"),
        payload=_dict(g("payload"), "payload"),
        call_method=g("call_method"),
        account_id=g("account_id"),
        branch_code=g("branch_code"),
        branch_name=g("branch_name"),
        account_holder_name=g("account_holder_name"),
        account_number=g("account_number"),
        raw=d,
    )


def parse_webhook(value: Any) -> WebhookConfiguration:
    """A :class:`WebhookConfiguration`; ``auth_token`` is dropped, from ``raw`` too,
    and only its SHA-256 digest kept."""
    d = _object(value, "the webhook configuration")
    digest = None
    if "auth_token" in d:
        token = d["auth_token"]
        if isinstance(token, str) and token:
            digest = hashlib.sha256(token.encode()).hexdigest()
        d = {k: v for k, v in d.items() if k != "auth_token"}
    g = d.get
    triggers = g("triggers")
    if triggers is None:
        triggers = ()
    elif type(triggers) is not list or not all(type(t) is str for t in triggers):
        raise ShapeError("field 'triggers' is not a list of strings")
    return WebhookConfiguration(
        id=_required_uuid(g("id"), "id"),
        platform_id=_uuid(g("platform_id"), "platform_id"),
        merchant_id=_uuid(g("merchant_id"), "merchant_id"),
        store_id=_uuid(g("store_id"), "store_id"),
        triggers=tuple(triggers),
        url=g("url"),
        active=_bool(g("active"), "active"),
        created_on=_datetime(g("created_on"), "created_on"),
        updated_on=_datetime(g("updated_on"), "updated_on"),
        is_integration=_bool(g("is_integration"), "is_integration"),
        auth_token_sha256=digest,
        raw=d,
    )


def parse_transaction_token(value: Any) -> TransactionToken:
    """A :class:`TransactionToken` from the decoded JSON of a transaction token."""
    d = _object(value, "the transaction token")
    g = d.get
    return TransactionToken(
        id=_required_uuid(g("id"), "id"),
        store_id=_uuid(g("store_id"), "store_id"),
        payment_type=g("payment_type"),
        type=g("type"),
        mode=g("mode"),
        email=g("email"),
        metadata=_dict(g("metadata"), "metadata"),
        data=_dict(g("data"), "data"),
        created_on=_datetime(g("created_on"), "created_on"),
        raw=d,
    )


def page_parser(parse_item: Callable[[Any], T]) -> Callable[[Any], Page[T]]:
    """A parser of ``{"items": [...], "has_more": bool, "total_hits"?: int}``."""

    def parse_page(value: Any) -> Page[T]:
        d = _object(value, "the list")
        items = d.get("items")
        if type(items) is not list:
            raise ShapeError("field 'items' is missing or not a list")
        has_more = d.get("has_more")
        if type(has_more) is not bool:
            raise ShapeError("field 'has_more' is missing or not a boolean")
        return Page(
            items=tuple([parse_item(item) for item in items]),
            has_more=has_more,
            total_hits=_int(d.get("total_hits"), "total_hits"),
            raw=d,
        )

    return parse_page
