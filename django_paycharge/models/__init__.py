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
from .sync import SyncCheckpoint, SyncWindow
from .webhooks import WebhookConfiguration, WebhookDelivery

__all__ = [
    "FINAL_STATUSES",
    "Charge",
    "ChargeMode",
    "ChargeRequest",
    "ChargeStatus",
    "IssuerToken",
    "PaymentType",
    "SyncCheckpoint",
    "SyncWindow",
    "WebhookConfiguration",
    "WebhookDelivery",
    "status_rank",
]
