"""HTTP client of the payment charge service: plain ``requests``, no Django.

>>> client = PayChargeClient(base_url="https://api.univapay.com", secret=..., jwt=...)
>>> charge = client.charges.create(transaction_token_id=token, amount=1000, currency="JPY")
>>> for charge in client.charges.list(store_id=store, limit=100): ...
"""

from __future__ import annotations

from ._client import PayChargeClient
from .lifecycle_types import Cancel, Capture, ChargeExpiry, Refund, ThreeDSIssuerToken
from .paging import Prefetcher, RawPage
from .parsing import ShapeError, parse_charge, parse_webhook
from .retries import IN_PROGRESS_CODE
from .types import (
    Charge,
    ChargeError,
    ChargeRedirect,
    IssuerToken,
    Page,
    Rejected,
    ThreeDS,
    TransactionToken,
    WebhookConfiguration,
)

__all__ = [
    "IN_PROGRESS_CODE",
    "Cancel",
    "Capture",
    "Charge",
    "ChargeError",
    "ChargeExpiry",
    "ChargeRedirect",
    "IssuerToken",
    "Page",
    "PayChargeClient",
    "Prefetcher",
    "RawPage",
    "Refund",
    "Rejected",
    "ShapeError",
    "ThreeDS",
    "ThreeDSIssuerToken",
    "TransactionToken",
    "WebhookConfiguration",
    "parse_charge",
    "parse_webhook",
]
