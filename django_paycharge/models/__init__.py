"""The local mirror of the gateway: what the shop keeps. Models never call the gateway."""

from .charges import (
    FINAL_STATUSES,
    Charge,
    ChargeMode,
    ChargeRequest,
    ChargeStatus,
    IssuerToken,
    PaymentType,
    status_rank,
)
from .idempotency import ApiIdempotencyRecord
from .quarantine import QuarantinedItem
from .sync import SyncCheckpoint, SyncWindow
from .tokens import TransactionTokenInfo
from .webhooks import WebhookConfiguration, WebhookDelivery

__all__ = [
    "FINAL_STATUSES",
    "ApiIdempotencyRecord",
    "Charge",
    "ChargeMode",
    "ChargeRequest",
    "ChargeStatus",
    "IssuerToken",
    "PaymentType",
    "QuarantinedItem",
    "SyncCheckpoint",
    "SyncWindow",
    "TransactionTokenInfo",
    "WebhookConfiguration",
    "WebhookDelivery",
    "status_rank",
]
