"""``client.charges``, ``client.issuer_tokens`` and ``client.tokens``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from ..paging import RawPage, follow_list, raw_page_parser
from ..params import CHARGE_FILTERS, ChargeCreateParams, list_params
from ..parsing import page_parser, parse_charge, parse_issuer_token, parse_transaction_token
from ..transport import Transport
from ..types import Charge, IssuerToken, Page, Rejected, TransactionToken
from ..validation import Checker, path_ids, request_key, validate_bool, validate_uuid
from .charge_operations import ChargeOperations, ThreeDSIssuerTokens
from .subscriptions import _nothing

__all__ = ["Charges", "IssuerTokens", "Tokens"]

_parse_charge_page = page_parser(parse_charge)
_read_charge_page = raw_page_parser(_parse_charge_page)


class Charges(ChargeOperations):
    """``client.charges``: create, read and list charges; capture and update them."""

    __slots__ = ("_polling_timeout", "_transport")

    def __init__(self, transport: Transport, polling_timeout: float) -> None:
        self._transport = transport
        self._polling_timeout = polling_timeout

    def create(
        self,
        params: ChargeCreateParams | None = None,
        /,
        *,
        idempotency_key: str | uuid.UUID | None = None,
        **fields: Any,
    ) -> Charge:
        """Create a charge (``POST /charges``) and return it, normally ``pending``.

        The charge is ``params``, or the same fields as keyword arguments (see
        :class:`~django_paycharge.client.params.ChargeCreateParams`): every
        rule is checked before anything is sent.

        The request always carries an ``Idempotency-Key``: ``idempotency_key``
        or a fresh UUID4, the same on every retry. Pass your own (stored
        before calling) to retry safely after a :class:`NetworkError`: the
        gateway answers with the first charge instead of making a second one.
        """
        charge = ChargeCreateParams.given(params, fields)
        checker = Checker()
        key = request_key(checker, idempotency_key)
        body = charge.to_body(checker)
        return self._transport.request(
            "POST", "/charges", parse_charge, body=body, idempotency_key=key
        )

    def retrieve(
        self,
        store_id: uuid.UUID | str,
        charge_id: uuid.UUID | str,
        *,
        polling: bool = False,
        deadline: float | None = None,
    ) -> Charge:
        """Read one charge (``GET /stores/{store_id}/charges/{charge_id}``).

        With ``polling=True`` the gateway holds the answer until the status
        changes or its own time limit passes, so the read time-out of that
        request is raised to the client's ``polling_timeout`` (60 s unless
        configured), never below the normal one. ``deadline`` (a
        :func:`time.monotonic` value) caps it, retries included, at the time
        left: the call ends by then, or one connect time-out later at most.
        """
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        path = f"/stores/{store}/charges/{charge}"
        if validate_bool(polling, "polling"):
            return self._transport.request(
                "GET",
                path,
                parse_charge,
                params={"polling": "true"},
                read_timeout=self._polling_timeout,
                deadline=deadline,
            )
        return self._transport.request("GET", path, parse_charge, deadline=deadline)

    def list_page(
        self,
        *,
        store_id: uuid.UUID | str | None = None,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
        **filters: Any,
    ) -> Page[Charge]:
        """One page of charges (``GET /charges`` or ``/stores/{store_id}/charges``).

        Filters: ``from_``/``to`` (aware datetimes; ``from`` also accepted via
        ``**{"from": ...}``), ``amount_from``, ``amount_to``, ``currency``,
        ``mode``, ``transaction_token_id``, ``metadata``, and any other the
        gateway knows (text, int, bool, UUID or aware datetime).
        """
        path, params = self._list_request(store_id, limit, cursor, cursor_direction, filters)
        return self._transport.request("GET", path, _parse_charge_page, params=params)

    def fetch_page(
        self,
        *,
        store_id: uuid.UUID | str | None = None,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
        **filters: Any,
    ) -> RawPage[Charge]:
        """One page of charges as :meth:`list_page` reads it, its items not typed yet.

        The next page's cursor (``.cursor``) is known at once; ``.parse()``
        gives the :class:`Page` of :meth:`list_page` (a bulk reader sends the
        next request in between: see ``Prefetcher``).
        """
        path, params = self._list_request(store_id, limit, cursor, cursor_direction, filters)
        return self._transport.request("GET", path, _read_charge_page, params=params)

    def list(
        self,
        *,
        store_id: uuid.UUID | str | None = None,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
        rejected: list[Rejected] | None = None,
        **filters: Any,
    ) -> Iterator[Charge]:
        """Every charge, following ``has_more`` page by page (arguments as :meth:`list_page`).

        Arguments are checked now, before the first page is requested. Items
        without a usable id are appended to ``rejected`` when given.
        """
        path, params = self._list_request(store_id, limit, cursor, cursor_direction, filters)
        return follow_list(self._transport, path, _parse_charge_page, params, rejected)

    @staticmethod
    def _list_request(
        store_id: Any, limit: Any, cursor: Any, direction: Any, filters: Mapping[str, Any]
    ) -> tuple[str, dict[str, str]]:
        checker = Checker()
        store = None if store_id is None else checker.check(validate_uuid, store_id, "store_id")
        params = list_params(
            limit=limit,
            cursor=cursor,
            cursor_direction=direction,
            filters=filters,
            known_filters=CHARGE_FILTERS,
            checker=checker,
        )
        return ("/charges" if store is None else f"/stores/{store}/charges"), params


class IssuerTokens(ThreeDSIssuerTokens):
    """``client.issuer_tokens``: the payment information of online and bank-transfer charges."""

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def retrieve(self, store_id: uuid.UUID | str, charge_id: uuid.UUID | str) -> IssuerToken:
        """``GET /stores/{store_id}/charges/{charge_id}/issuer_token``.

        For a bank-transfer charge the gateway answers 409 (``ConflictError``)
        unless the charge is ``awaiting``.
        """
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        path = f"/stores/{store}/charges/{charge}/issuer_token"
        return self._transport.request("GET", path, parse_issuer_token)


class Tokens:
    """``client.tokens``: read transaction tokens; delete a saved card."""

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def retrieve(self, store_id: uuid.UUID | str, token_id: uuid.UUID | str) -> TransactionToken:
        """``GET /stores/{store_id}/tokens/{token_id}``."""
        store, token = path_ids(store_id=store_id, token_id=token_id)
        return self._transport.request(
            "GET", f"/stores/{store}/tokens/{token}", parse_transaction_token
        )

    def delete(self, store_id: uuid.UUID | str, token_id: uuid.UUID | str) -> None:
        """``DELETE /stores/{store_id}/tokens/{token_id}``: the saved card can no longer be
        charged (the gateway keeps it, inactive, and sends ``recurring_token_deleted``)."""
        store, token = path_ids(store_id=store_id, token_id=token_id)
        self._transport.request("DELETE", f"/stores/{store}/tokens/{token}", _nothing)
