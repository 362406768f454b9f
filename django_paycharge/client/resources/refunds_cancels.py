"""``client.refunds`` and ``client.cancels``: what a charge's refunds and cancels share, and each.

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

from ..lifecycle_params import metadata_body, refund_body
from ..lifecycle_parsing import parse_cancel, parse_refund
from ..lifecycle_types import Cancel, Refund
from ..paging import follow_list
from ..params import list_params
from ..parsing import page_parser
from ..transport import Transport
from ..types import Page, Rejected
from ..validation import Checker, path_ids, request_key, validate_bool

__all__ = ["Cancels", "Refunds"]

T = TypeVar("T", Refund, Cancel)


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
        return follow_list(self._transport, path, self._page, params, rejected)

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
        key = request_key(checker, idempotency_key)
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
        key = request_key(checker, idempotency_key)
        body = metadata_body(metadata, required=False, checker=checker)
        return self._transport.request("POST", base, parse_cancel, body=body, idempotency_key=key)
