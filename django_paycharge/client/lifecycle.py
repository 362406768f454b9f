"""The rest of a charge's life on the client: capture, metadata, refunds, cancels, 3-D Secure.

``client.charges.capture()`` and ``client.charges.update()`` come from
:class:`ChargeOperations`, ``client.issuer_tokens.retrieve_three_ds()`` from
:class:`ThreeDSIssuerTokens`; ``client.refunds`` and ``client.cancels`` are
:class:`Refunds` and :class:`Cancels`.

Every request that changes something carries an ``Idempotency-Key`` (the
caller's, or a fresh UUID4), the same on every retry, so the transport may
retry it after a lost answer: the gateway replays its first answer instead of
refunding twice. Pass your own key, stored before calling, to retry safely
after a :class:`~django_paycharge.exceptions.NetworkError` yourself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from ._lifecycle_parse import (
    parse_cancel,
    parse_capture,
    parse_refund,
    parse_three_ds_issuer_token,
)
from ._paging import follow, path_ids
from ._parse import page_parser, parse_charge
from ._transport import Transport
from .lifecycle_params import capture_body, metadata_body, refund_body
from .lifecycle_types import Cancel, Capture, Refund, ThreeDSIssuerToken
from .params import list_params
from .types import Charge, Page, Rejected
from .validation import Checker, validate_bool, validate_idempotency_key

__all__ = ["Cancels", "ChargeOperations", "Refunds", "ThreeDSIssuerTokens"]

T = TypeVar("T", Refund, Cancel)


def _key(checker: Checker, idempotency_key: Any) -> str:
    if idempotency_key is None:
        return str(uuid.uuid4())
    return checker.check(validate_idempotency_key, idempotency_key, "idempotency_key") or ""


class ChargeOperations:
    """Capture and metadata update, mixed into ``client.charges``."""

    __slots__ = ()
    _transport: Transport

    def capture(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        amount: int | None = None,
        currency: str | None = None,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Capture:
        """Capture an ``authorized`` charge (``POST .../charges/{id}/capture``).

        Without ``amount`` the whole authorization is captured (no body is
        sent); a partial ``amount`` (at most the authorized one) needs its
        ``currency``, the charge's. The answer does not hold the charge: read
        it afterwards to see it ``successful``.
        """
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        checker = Checker()
        key = _key(checker, idempotency_key)
        body = capture_body(amount=amount, currency=currency, checker=checker)
        return self._transport.request(
            "POST",
            f"/stores/{store}/charges/{charge}/capture",
            parse_capture,
            body=body,
            idempotency_key=key,
        )

    def update(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        metadata: Mapping[str, Any],
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Charge:
        """Add or change metadata keys of a charge (``PATCH .../charges/{id}``); returns it.

        The customer's return query (``redirect.endpoint``,
        ``three_ds.redirect_endpoint``) keeps the metadata given at creation.
        """
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        checker = Checker()
        key = _key(checker, idempotency_key)
        body = metadata_body(metadata, required=True, checker=checker)
        return self._transport.request(
            "PATCH",
            f"/stores/{store}/charges/{charge}",
            parse_charge,
            body=body,
            idempotency_key=key,
        )


class ThreeDSIssuerTokens:
    """The 3-D Secure issuer token, mixed into ``client.issuer_tokens``."""

    __slots__ = ()
    _transport: Transport

    def retrieve_three_ds(
        self, store_id: uuid.UUID | str, charge_id: uuid.UUID | str
    ) -> ThreeDSIssuerToken:
        """``GET .../three_ds/issuer_token``, for a card charge ``awaiting`` 3-D Secure.

        The customer's browser POSTs ``payload`` to ``issuer_token`` (encoded as
        ``content_type``); the gateway then sends it to ``three_ds.redirect_endpoint``.
        """
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        path = f"/stores/{store}/charges/{charge}/three_ds/issuer_token"
        return self._transport.request("GET", path, parse_three_ds_issuer_token)


class _ChargeChildren(Generic[T]):
    """What refunds and cancels share: read one (with polling), list them page by page."""

    __slots__ = ("_page", "_parse", "_polling_timeout", "_segment", "_transport")

    def __init__(
        self,
        transport: Transport,
        polling_timeout: float,
        segment: str,
        parse: Callable[[Any], T],
    ) -> None:
        self._transport = transport
        self._polling_timeout = polling_timeout
        self._segment = segment
        self._parse: Callable[[Any], T] = parse
        self._page: Callable[[Any], Page[T]] = page_parser(parse)

    def _base(self, store_id: Any, charge_id: Any) -> str:
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        return f"/stores/{store}/charges/{charge}/{self._segment}"

    def retrieve(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        item_id: uuid.UUID | str,
        *,
        polling: bool = False,
    ) -> T:
        """One refund (or cancel); ``polling=True`` holds the answer while it is ``pending``."""
        base = self._base(store_id, charge_id)
        (item,) = path_ids(id=item_id)
        if validate_bool(polling, "polling"):
            return self._transport.request(
                "GET",
                f"{base}/{item}",
                self._parse,
                params={"polling": "true"},
                read_timeout=self._polling_timeout,
            )
        return self._transport.request("GET", f"{base}/{item}", self._parse)

    def list_page(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
    ) -> Page[T]:
        """One page of the charge's refunds (or cancels), newest first by default."""
        path, params = self._list_request(store_id, charge_id, limit, cursor, cursor_direction)
        return self._transport.request("GET", path, self._page, params=params)

    def list(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
        rejected: list[Rejected] | None = None,
    ) -> Iterator[T]:
        """Every refund (or cancel) of the charge, following ``has_more``.

        Items that could not be read (no usable ``id``) are appended to
        ``rejected`` when it is given, as :meth:`Charges.list` does.
        """
        path, params = self._list_request(store_id, charge_id, limit, cursor, cursor_direction)

        def fetch(after: str | None) -> Page[T]:
            query = params if after is None else {**params, "cursor": after}
            return self._transport.request("GET", path, self._page, params=query)

        return follow(fetch, params.get("cursor"), rejected)

    def _list_request(
        self, store_id: Any, charge_id: Any, limit: Any, cursor: Any, direction: Any
    ) -> tuple[str, dict[str, str]]:
        base = self._base(store_id, charge_id)
        params = list_params(limit=limit, cursor=cursor, cursor_direction=direction, filters={})
        return base, params


class Refunds(_ChargeChildren[Refund]):
    """``client.refunds``: refund a charge in full or in part; read and list its refunds."""

    __slots__ = ()

    def __init__(self, transport: Transport, polling_timeout: float) -> None:
        super().__init__(transport, polling_timeout, "refunds", parse_refund)

    def create(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        amount: int,
        currency: str,
        reason: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Refund:
        """Refund ``amount`` (minor units, the charge's ``currency``); the answer is ``pending``.

        ``reason`` is ``duplicate``, ``fraud`` or ``customer_request``. Only a
        ``successful`` charge can be refunded, never konbini or bank-transfer
        ones, and refunds add up to at most the charged amount (the gateway
        answers 4xx otherwise). ``refund_finished`` webhooks say when it is done.
        """
        base = self._base(store_id, charge_id)
        checker = Checker()
        key = _key(checker, idempotency_key)
        body = refund_body(
            amount=amount,
            currency=currency,
            reason=reason,
            message=message,
            metadata=metadata,
            checker=checker,
        )
        return self._transport.request("POST", base, parse_refund, body=body, idempotency_key=key)


class Cancels(_ChargeChildren[Cancel]):
    """``client.cancels``: cancel a charge; read and list its cancels."""

    __slots__ = ()

    def __init__(self, transport: Transport, polling_timeout: float) -> None:
        super().__init__(transport, polling_timeout, "cancels", parse_cancel)

    def create(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Cancel:
        """Cancel a charge (an authorization, an unpaid charge, or a card payment not yet settled).

        The answer is ``pending``; when the cancel succeeds the charge becomes
        ``canceled`` and ``cancel_finished`` webhooks are sent.
        """
        base = self._base(store_id, charge_id)
        checker = Checker()
        key = _key(checker, idempotency_key)
        body = metadata_body(metadata, required=False, checker=checker)
        return self._transport.request("POST", base, parse_cancel, body=body, idempotency_key=key)
