"""HTTP client of the payment charge service: plain ``requests``, no Django.

>>> client = PayChargeClient(base_url="https://api.univapay.com", secret=..., jwt=...)
>>> charge = client.charges.create(transaction_token_id=token, amount=1000, currency="JPY")
>>> for charge in client.charges.list(store_id=store, limit=100): ...
"""

from __future__ import annotations

from ._client import PayChargeClient
from .lifecycle_types import Cancel, Capture, ChargeExpiry, Refund, ThreeDSIssuerToken
from .paging import Prefetcher, RawPage
from .parsing import ShapeError, parse_charge, parse_transaction_token, parse_webhook
from .retries import IN_PROGRESS_CODE
from .subscription_params import PlanSimulationParams, SubscriptionCreateParams
from .subscription_parsing import parse_subscription
from .subscription_types import (
    Plan,
    ScheduledPayment,
    ScheduleSettings,
    SimulatedPayment,
    Subscription,
)
from .types import (
    Charge,
    ChargeError,
    ChargeRedirect,
    CvvAuthorization,
    IssuerToken,
    Page,
    Rejected,
    ThreeDS,
    TokenCard,
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
    "CvvAuthorization",
    "IssuerToken",
    "Page",
    "PayChargeClient",
    "Plan",
    "PlanSimulationParams",
    "Prefetcher",
    "RawPage",
    "Refund",
    "Rejected",
    "ScheduleSettings",
    "ScheduledPayment",
    "ShapeError",
    "SimulatedPayment",
    "Subscription",
    "SubscriptionCreateParams",
    "ThreeDS",
    "ThreeDSIssuerToken",
    "TokenCard",
    "TransactionToken",
    "WebhookConfiguration",
    "parse_charge",
    "parse_subscription",
    "parse_transaction_token",
    "parse_webhook",
]
