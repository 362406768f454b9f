"""Capture, metadata update, expiry and 3-D Secure issuer tokens: the charge operations mixed
into ``client.charges`` (:class:`ChargeOperations`) and ``client.issuer_tokens``
(:class:`ThreeDSIssuerTokens`).

Requests that change a charge carry an ``Idempotency-Key`` (the caller's, or a
fresh UUID4), the same on every retry: see :mod:`.refunds_cancels`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ..lifecycle_params import capture_body, metadata_body
from ..lifecycle_parsing import parse_capture, parse_charge_expiry, parse_three_ds_issuer_token
from ..lifecycle_types import Capture, ChargeExpiry, ThreeDSIssuerToken
from ..parsing import parse_charge
from ..transport import Transport
from ..types import Charge
from ..validation import Checker, path_ids, request_key

__all__ = ["ChargeOperations", "ThreeDSIssuerTokens"]


class ChargeOperations:
    """Capture, metadata update and expiry, mixed into ``client.charges``."""

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
        key = request_key(checker, idempotency_key)
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
        key = request_key(checker, idempotency_key)
        body = metadata_body(metadata, required=True, checker=checker)
        return self._transport.request(
            "PATCH",
            f"/stores/{store}/charges/{charge}",
            parse_charge,
            body=body,
            idempotency_key=key,
        )

    def expiry(self, store_id: uuid.UUID | str, charge_id: uuid.UUID | str) -> ChargeExpiry:
        """When a convenience-store or bank-transfer charge must be paid by
        (``GET .../charges/{id}/expiry/latest``; a 404 for charges without one)."""
        store, charge = path_ids(store_id=store_id, charge_id=charge_id)
        path = f"/stores/{store}/charges/{charge}/expiry/latest"
        return self._transport.request("GET", path, parse_charge_expiry)


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
