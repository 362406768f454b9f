"""``client.webhooks``: a store's webhook configurations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from ..paging import follow_list
from ..params import list_params
from ..parsing import page_parser, parse_webhook
from ..transport import Transport
from ..types import Page, Rejected, WebhookConfiguration
from ..validation import Checker, validate_bool, validate_http_url, validate_uuid

_parse_webhook_page = page_parser(parse_webhook)


class Webhooks:
    """``client.webhooks``: a store's webhook configurations."""

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    @staticmethod
    def _base(store_id: Any, merchant_id: Any, checker: Checker) -> str:
        store = checker.check(validate_uuid, store_id, "store_id")
        if merchant_id is None:
            return f"/stores/{store}/webhooks"
        merchant = checker.check(validate_uuid, merchant_id, "merchant_id")
        return f"/merchants/{merchant}/stores/{store}/webhooks"

    def retrieve(
        self,
        store_id: uuid.UUID | str,
        webhook_id: uuid.UUID | str,
        *,
        merchant_id: uuid.UUID | str | None = None,
    ) -> WebhookConfiguration:
        """One webhook configuration; the ``/merchants/{merchant_id}`` prefix when given."""
        checker = Checker()
        base = self._base(store_id, merchant_id, checker)
        webhook = checker.check(validate_uuid, webhook_id, "webhook_id")
        checker.raise_if_any()
        return self._transport.request("GET", f"{base}/{webhook}", parse_webhook)

    def _list_request(
        self,
        store_id: uuid.UUID | str,
        merchant_id: uuid.UUID | str | None,
        limit: int | None,
        cursor: uuid.UUID | str | None,
        cursor_direction: str | None,
        filters: dict[str, Any],
    ) -> tuple[str, dict[str, str]]:
        checker = Checker()
        base = self._base(store_id, merchant_id, checker)
        params = list_params(
            limit=limit,
            cursor=cursor,
            cursor_direction=cursor_direction,
            filters=filters,
            checker=checker,
        )
        return base, params

    def list_page(
        self,
        store_id: uuid.UUID | str,
        *,
        merchant_id: uuid.UUID | str | None = None,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
        **filters: Any,
    ) -> Page[WebhookConfiguration]:
        """One page of a store's webhook configurations."""
        base, params = self._list_request(
            store_id, merchant_id, limit, cursor, cursor_direction, filters
        )
        return self._transport.request("GET", base, _parse_webhook_page, params=params)

    def list(
        self,
        store_id: uuid.UUID | str,
        *,
        merchant_id: uuid.UUID | str | None = None,
        limit: int | None = None,
        cursor: uuid.UUID | str | None = None,
        cursor_direction: str | None = None,
        rejected: list[Rejected] | None = None,
        **filters: Any,
    ) -> Iterator[WebhookConfiguration]:
        """Every webhook configuration of a store, following ``has_more``.

        Items without a usable id are appended to ``rejected`` when given.
        """
        base, params = self._list_request(
            store_id, merchant_id, limit, cursor, cursor_direction, filters
        )
        return follow_list(self._transport, base, _parse_webhook_page, params, rejected)

    def create(
        self,
        store_id: uuid.UUID | str,
        *,
        url: str,
        triggers: Sequence[str],
        auth_token: str,
        active: bool = True,
    ) -> WebhookConfiguration:
        """Register a delivery endpoint (``POST /stores/{store_id}/webhooks``).

        ``auth_token`` is what the gateway will send in the ``Authorization``
        header of every delivery; it is sent here and nowhere else, and the
        result does not keep it. Not retried on 5xx or read time-outs (the
        gateway takes no idempotency key here): list the webhooks first.
        """
        checker = Checker()
        store = checker.check(validate_uuid, store_id, "store_id")
        checker.check(validate_http_url, url, "url")
        if (
            isinstance(triggers, str)
            or not isinstance(triggers, Sequence)
            or not triggers
            or not all(isinstance(t, str) and t for t in triggers)
        ):
            checker.fail("triggers", "must be a non-empty list of trigger names")
        if not isinstance(auth_token, str) or not auth_token.strip():
            checker.fail("auth_token", "must be a non-empty string")
        checker.check(validate_bool, active, "active")
        checker.raise_if_any()
        body = {"url": url, "triggers": list(triggers), "auth_token": auth_token, "active": active}
        return self._transport.request(
            "POST", f"/stores/{store}/webhooks", parse_webhook, body=body
        )
