"""The local mirror of the gateway: what the shop keeps. Models never call the gateway."""

from .announcements import Announcement
from .charges import (
    OPEN_REQUEST_STATES,
    REFUNDED_ANNOTATION,
    Charge,
    ChargeMode,
    ChargeRequest,
    ChargeStatus,
    ConvenienceStore,
    IssuerToken,
    PaymentType,
    RequestState,
    TransactionTokenType,
)
from .dashboard import Dashboard
from .idempotency import ApiIdempotencyRecord
from .problems import OwnerProblem
from .quarantine import QuarantinedItem
from .refunds import (
    COUNTED_REFUND_STATUSES,
    Cancel,
    ChargeActionRequest,
    OperationStatus,
    Refund,
    RefundReason,
    RefundState,
    refund_state,
    refunded_amount,
    with_refunded_amounts,
)
from .subscriptions import (
    ScheduledPayment,
    Subscription,
    SubscriptionRequest,
    SubscriptionStatus,
)
from .sync import SyncCheckpoint, SyncWindow
from .tokens import TransactionTokenInfo
from .webhooks import WebhookConfiguration, WebhookDelivery

__all__ = [
    "COUNTED_REFUND_STATUSES",
    "OPEN_REQUEST_STATES",
    "REFUNDED_ANNOTATION",
    "Announcement",
    "ApiIdempotencyRecord",
    "Cancel",
    "Charge",
    "ChargeActionRequest",
    "ChargeMode",
    "ChargeRequest",
    "ChargeStatus",
    "ConvenienceStore",
    "Dashboard",
    "IssuerToken",
    "OperationStatus",
    "OwnerProblem",
    "PaymentType",
    "QuarantinedItem",
    "Refund",
    "RefundReason",
    "RefundState",
    "RequestState",
    "ScheduledPayment",
    "Subscription",
    "SubscriptionRequest",
    "SubscriptionStatus",
    "SyncCheckpoint",
    "SyncWindow",
    "TransactionTokenInfo",
    "TransactionTokenType",
    "WebhookConfiguration",
    "WebhookDelivery",
    "refund_state",
    "refunded_amount",
    "with_refunded_amounts",
]
