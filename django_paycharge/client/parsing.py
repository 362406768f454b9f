"""Turn decoded JSON (floats already ``Decimal``) into the typed results.

A tolerant reader: only a resource's own ``id`` is required. Every other
field may be missing, null, of another JSON type or a value the spec does not
list; it is typed when it can be (``"1000"`` is the integer 1000, ``"true"``
is ``True``) and ``None`` otherwise, while ``raw`` keeps what the gateway sent.
Text fields take strings as they are and numbers as their text.

Written as flat functions with one ``dict.get`` per field: list pages are
parsed item by item, and per-field indirection (descriptors, schemas) is what
makes generated SDKs slow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar
from uuid import UUID

from .types import (
    Charge,
    ChargeError,
    ChargeRedirect,
    CvvAuthorization,
    IssuerToken,
    JSONObject,
    Page,
    Rejected,
    ThreeDS,
    TokenCard,
    TransactionToken,
    WebhookConfiguration,
    token_digest,
)
from .validation import MAX_UTC_OFFSET

T = TypeVar("T")

logger = logging.getLogger("django_paycharge.client")


class ShapeError(ValueError):
    """A 2xx body cannot be read at all (not an object, no usable ``id``); the
    transport turns it into :class:`~django_paycharge.exceptions.InvalidResponseError`."""


def _object(value: Any, what: str) -> JSONObject:
    if type(value) is not dict:
        raise ShapeError(f"{what} is not a JSON object")
    return value


def _uuid(value: Any) -> UUID | None:
    if type(value) is not str:
        return None
    try:
        return UUID(value)
    except ValueError:
        return None


def _required_uuid(value: Any, name: str) -> UUID:
    result = _uuid(value)
    if result is None:
        reason = "missing" if value is None else "not a UUID"
        raise ShapeError(f"field {name!r} is {reason}")
    return result


def _int(value: Any) -> int | None:
    kind = type(value)
    if kind is int:
        return value  # type: ignore[no-any-return]
    # Decimal when the gateway wrote "1000.0": still a whole amount.
    if kind is Decimal:
        return int(value) if value.is_finite() and value == value.to_integral_value() else None
    if kind is str:
        number = _decimal(value.strip())
        if number is not None and number == number.to_integral_value():
            return int(number)
    return None


def _decimal(value: Any) -> Decimal | None:
    kind = type(value)
    if kind is Decimal:
        return value if value.is_finite() else None
    if kind is int:
        return Decimal(value)
    if kind is str and len(value) <= 64:
        try:
            result = Decimal(value)
        except InvalidOperation:
            return None
        return result if result.is_finite() else None
    return None


def _date(value: Any) -> date | None:
    if type(value) is not str:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value).date()
    except ValueError:
        return None


def _datetime(value: Any) -> datetime | None:
    if type(value) is not str:
        return None
    try:
        result = datetime.fromisoformat(value)
    except ValueError:
        return None
    # The spec gives gateway times in UTC; a value without an offset is UTC.
    if result.tzinfo is None:
        result = result.replace(tzinfo=UTC)
    try:
        in_utc = result.astimezone(UTC)
    except OverflowError:  # year 1 at +14:00 has no UTC time: unknown, not a crash later
        return None
    # The gateway's own offset is kept, unless no place uses it: Python takes
    # offsets up to 24 hours, PostgreSQL only up to 16 (raw keeps what was sent).
    return result if abs(result.utcoffset() or timedelta()) <= MAX_UTC_OFFSET else in_utc


_BOOLS = {"true": True, "false": False}


def _bool(value: Any) -> bool | None:
    if type(value) is bool:
        return value
    if type(value) is str:
        return _BOOLS.get(value.strip().lower())
    return None


def _text(value: Any) -> str | None:
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int or kind is Decimal:
        return str(value)
    return None


def _dict(value: Any) -> JSONObject | None:
    return value if type(value) is dict else None


def parse_charge(value: Any) -> Charge:
    """A :class:`Charge` from the decoded JSON of a charge (only ``id`` is required)."""
    d = _object(value, "the charge")
    g = d.get
    error = g("error")
    redirect = g("redirect")
    three_ds = g("three_ds")
    return Charge(
        id=_required_uuid(g("id"), "id"),
        store_id=_uuid(g("store_id")),
        transaction_token_id=_uuid(g("transaction_token_id")),
        transaction_token_type=_text(g("transaction_token_type")),
        subscription_id=_uuid(g("subscription_id")),
        merchant_transaction_id=_text(g("merchant_transaction_id")),
        requested_amount=_int(g("requested_amount")),
        requested_currency=_text(g("requested_currency")),
        requested_amount_formatted=_decimal(g("requested_amount_formatted")),
        charged_amount=_int(g("charged_amount")),
        charged_currency=_text(g("charged_currency")),
        charged_amount_formatted=_decimal(g("charged_amount_formatted")),
        fee_amount=_int(g("fee_amount")),
        fee_currency=_text(g("fee_currency")),
        fee_amount_formatted=_decimal(g("fee_amount_formatted")),
        only_direct_currency=_bool(g("only_direct_currency")),
        capture_at=_datetime(g("capture_at")),
        descriptor=_text(g("descriptor")),
        descriptor_phone_number=_text(g("descriptor_phone_number")),
        status=_text(g("status")),
        error=_charge_error(error) if type(error) is dict else None,
        metadata=_dict(g("metadata")),
        mode=_text(g("mode")),
        created_on=_datetime(g("created_on")),
        redirect=_redirect(redirect) if type(redirect) is dict else None,
        merchant_name=_text(g("merchant_name")),
        store_name=_text(g("store_name")),
        three_ds=_three_ds(three_ds) if type(three_ds) is dict else None,
        raw=d,
    )


def _charge_error(d: JSONObject) -> ChargeError:
    return ChargeError(
        code=_int(d.get("code")),
        message=_text(d.get("message")),
        detail=_text(d.get("detail")),
        raw=d,
    )


def _redirect(d: JSONObject) -> ChargeRedirect:
    return ChargeRedirect(
        endpoint=_text(d.get("endpoint")), redirect_id=_uuid(d.get("redirect_id")), raw=d
    )


def _three_ds(d: JSONObject) -> ThreeDS:
    return ThreeDS(
        redirect_endpoint=_text(d.get("redirect_endpoint")), mode=_text(d.get("mode")), raw=d
    )


def parse_issuer_token(value: Any) -> IssuerToken:
    """An :class:`IssuerToken` from the decoded JSON of an issuer token (no field required)."""
    d = _object(value, "the issuer token")
    g = d.get
    return IssuerToken(
        payment_type=_text(g("payment_type")),
        issuer_token=_text(g("issuer_token")),
        payload=_dict(g("payload")),
        call_method=_text(g("call_method")),
        account_id=_text(g("account_id")),
        branch_code=_text(g("branch_code")),
        branch_name=_text(g("branch_name")),
        account_holder_name=_text(g("account_holder_name")),
        account_number=_text(g("account_number")),
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
            digest = token_digest(token)
        d = {k: v for k, v in d.items() if k != "auth_token"}
    g = d.get
    triggers = g("triggers")
    # Trigger names are text; anything else in the list stays in ``raw`` only.
    names = tuple(t for t in triggers if type(t) is str) if type(triggers) is list else ()
    return WebhookConfiguration(
        id=_required_uuid(g("id"), "id"),
        platform_id=_uuid(g("platform_id")),
        merchant_id=_uuid(g("merchant_id")),
        store_id=_uuid(g("store_id")),
        triggers=names,
        url=_text(g("url")),
        active=_bool(g("active")),
        created_on=_datetime(g("created_on")),
        updated_on=_datetime(g("updated_on")),
        is_integration=_bool(g("is_integration")),
        auth_token_sha256=digest,
        raw=d,
    )


def parse_transaction_token(value: Any) -> TransactionToken:
    """A :class:`TransactionToken` from the decoded JSON of a transaction token."""
    d = _object(value, "the transaction token")
    g = d.get
    data = _dict(g("data"))
    cvv = _dict(data.get("cvv_authorize")) if data is not None else None
    return TransactionToken(
        id=_required_uuid(g("id"), "id"),
        store_id=_uuid(g("store_id")),
        payment_type=_text(g("payment_type")),
        type=_text(g("type")),
        mode=_text(g("mode")),
        email=_text(g("email")),
        metadata=_dict(g("metadata")),
        data=data,
        created_on=_datetime(g("created_on")),
        raw=d,
        active=_bool(g("active")),
        usage_limit=_text(g("usage_limit")),
        last_used_on=_datetime(g("last_used_on")),
        previous_id=_uuid(g("previous_id")),
        cvv_authorize=_cvv_authorization(cvv) if cvv is not None else None,
        card=_card(data, g("payment_type")),
    )


def _card(data: JSONObject | None, payment_type: Any) -> TokenCard | None:
    """``data.card`` as the gateway nests it; a card token's flat ``data`` (older bodies) too."""
    if data is None:
        return None
    card = _dict(data.get("card"))
    if card is None and payment_type == "card" and "last_four" in data:
        card = data
    if card is None:
        return None
    return TokenCard(
        brand=_text(card.get("brand")),
        last_four=_text(card.get("last_four")),
        exp_month=_int(card.get("exp_month")),
        exp_year=_int(card.get("exp_year")),
        raw=card,
    )


def _cvv_authorization(d: JSONObject) -> CvvAuthorization:
    return CvvAuthorization(
        enabled=_bool(d.get("enabled")),
        status=_text(d.get("status")),
        charge_id=_uuid(d.get("charge_id")),
        currency=_text(d.get("currency")),
        raw=d,
    )


def page_parser(parse_item: Callable[[Any], T]) -> Callable[[Any], Page[T]]:
    """A parser of ``{"items": [...], "has_more": bool, "total_hits"?: int}``.

    An item that cannot be read (not an object, no usable ``id``) does not sink
    its page: it goes to :attr:`Page.rejected` with the reason, and the caller
    decides what to do with it (the sync quarantines it). Without a readable
    ``has_more``, a page with items is taken to have more: one extra request
    that answers an empty page is cheaper than charges never read.
    """

    def parse_page(value: Any) -> Page[T]:
        d = _object(value, "the list")
        items = d.get("items")
        if type(items) is not list:
            raise ShapeError("field 'items' is missing or not a list")
        parsed: list[T] = []
        rejected: list[Rejected] = []
        for item in items:
            try:
                parsed.append(parse_item(item))
            except ShapeError as exc:
                rejected.append(Rejected(raw=item, reason=str(exc)))
        has_more = _bool(d.get("has_more"))
        if has_more is None:
            has_more = bool(items)
        if rejected:
            logger.warning(
                "%d list item(s) could not be read: %s", len(rejected), rejected[0].reason
            )
        return Page(
            items=tuple(parsed),
            has_more=has_more,
            total_hits=_int(d.get("total_hits")),
            raw=d,
            rejected=tuple(rejected),
        )

    return parse_page
