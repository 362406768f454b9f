"""The local mirror of the gateway: what the shop keeps. Models never call the gateway."""

from .announcements import Announcement
from .charges import (
    OPEN_REQUEST_STATES,
    Charge,
    ChargeMode,
    ChargeRequest,
    ChargeStatus,
    IssuerToken,
    PaymentType,
    RequestState,
)
from .dashboard import Dashboard
from .idempotency import ApiIdempotencyRecord
from .quarantine import QuarantinedItem
from .refunds import (
    COUNTED_REFUND_STATUSES,
    Cancel,
    ChargeActionRequest,
    OperationStatus,
    Refund,
    RefundReason,
    refunded_amount,
    with_refunded_amounts,
)
from .sync import SyncCheckpoint, SyncWindow
from .tokens import TransactionTokenInfo
from .webhooks import WebhookConfiguration, WebhookDelivery

__all__ = [
    "COUNTED_REFUND_STATUSES",
    "OPEN_REQUEST_STATES",
    "Announcement",
    "ApiIdempotencyRecord",
    "Cancel",
    "Charge",
    "ChargeActionRequest",
    "ChargeMode",
    "ChargeRequest",
    "ChargeStatus",
    "Dashboard",
    "IssuerToken",
    "OperationStatus",
    "PaymentType",
    "QuarantinedItem",
    "Refund",
    "RefundReason",
    "RequestState",
    "SyncCheckpoint",
    "SyncWindow",
    "TransactionTokenInfo",
    "WebhookConfiguration",
    "WebhookDelivery",
    "refunded_amount",
    "with_refunded_amounts",
]
