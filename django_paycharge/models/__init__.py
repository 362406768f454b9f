"""The local mirror of the gateway: what the shop keeps. Models never call the gateway."""

from .charges import (
    Charge,
    ChargeMode,
    ChargeRequest,
    ChargeStatus,
    ConvenienceStore,
    IssuerToken,
    PaymentType,
    TransactionTokenType,
)
from .idempotency import ApiIdempotencyRecord
from .quarantine import QuarantinedItem
from .refunds import (
    COUNTED_REFUND_STATUSES,
    REFUNDED_ANNOTATION,
    Cancel,
    ChargeActionRequest,
    OperationStatus,
    Refund,
    RefundReason,
    RefundState,
    refund_state,
    refunded_amount,
    refunded_charge_ids,
    with_refunded_amounts,
)
from .sync import SyncCheckpoint, SyncWindow
from .tokens import TransactionTokenInfo
from .webhooks import WebhookConfiguration, WebhookDelivery

__all__ = [
    "COUNTED_REFUND_STATUSES",
    "REFUNDED_ANNOTATION",
    "ApiIdempotencyRecord",
    "Cancel",
    "Charge",
    "ChargeActionRequest",
    "ChargeMode",
    "ChargeRequest",
    "ChargeStatus",
    "ConvenienceStore",
    "IssuerToken",
    "OperationStatus",
    "PaymentType",
    "QuarantinedItem",
    "Refund",
    "RefundReason",
    "RefundState",
    "SyncCheckpoint",
    "SyncWindow",
    "TransactionTokenInfo",
    "TransactionTokenType",
    "WebhookConfiguration",
    "WebhookDelivery",
    "refund_state",
    "refunded_amount",
    "refunded_charge_ids",
    "with_refunded_amounts",
]
