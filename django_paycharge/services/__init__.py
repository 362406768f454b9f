"""The service layer: the only code that both calls the gateway and writes the mirror.

Every function takes explicit arguments (an ``account`` name where the gateway
is involved; the default account when None), is safe to call again, and sends
the app's signals. Every request that moves money (create, capture, cancel,
refund, metadata update; a subscription's create and changes) goes through one
machine, :mod:`.lifecycle.exactly_once`.
"""

from ..client.types import token_digest
from .bulk_refunds import RefundManyResult, RefundStep, batch_charges, refund_many
from .charges import (
    ChargeCheck,
    PaymentInstructions,
    charge_saved_card,
    check_charge_request,
    create_charge,
    delete_saved_card,
    fetch_issuer_token,
    fetch_three_ds_issuer_token,
    fill_payment_types,
    idempotency_key_for,
    known_payment_type,
    payment_attempt_key,
    payment_instructions,
    send_charge_request,
)
from .clients import get_client, reset_clients
from .lifecycle import (
    cancel_charge,
    capture_charge,
    left_to_refund,
    refund_annotations,
    refund_charge,
    refundable_amount,
    refundable_amounts,
    reserved_amounts,
    update_charge_metadata,
)
from .mirror import (
    UpsertResult,
    recount_refunds_total,
    refresh_charge,
    refresh_saved_card,
    refresh_subscription,
    store_remote_charge,
    upsert_charges,
    wait_for_charge,
)
from .recovery import (
    RecoveryResult,
    recover_action_requests,
    recover_charge_requests,
    recover_requests,
)
from .retry import retry_transient
from .subscriptions import (
    cancel_subscription,
    change_subscription_card,
    create_subscription,
    refresh_returned_charge,
    resume_subscription,
    scheduled_payments,
    simulate_plan,
    subscription_first_charge,
    suspend_subscription,
    update_subscription,
)
from .sync import (
    SubscriptionSyncResult,
    SyncResult,
    sync_charge_children,
    sync_charges,
    sync_charges_task,
    sync_refunds,
    sync_subscriptions,
)
from .webhooks import matches_auth_token, sync_webhooks

__all__ = [
    "ChargeCheck",
    "PaymentInstructions",
    "RecoveryResult",
    "RefundManyResult",
    "RefundStep",
    "SubscriptionSyncResult",
    "SyncResult",
    "UpsertResult",
    "batch_charges",
    "cancel_charge",
    "cancel_subscription",
    "capture_charge",
    "change_subscription_card",
    "charge_saved_card",
    "check_charge_request",
    "create_charge",
    "create_subscription",
    "delete_saved_card",
    "fetch_issuer_token",
    "fetch_three_ds_issuer_token",
    "fill_payment_types",
    "get_client",
    "idempotency_key_for",
    "known_payment_type",
    "left_to_refund",
    "matches_auth_token",
    "payment_attempt_key",
    "payment_instructions",
    "recount_refunds_total",
    "recover_action_requests",
    "recover_charge_requests",
    "recover_requests",
    "refresh_charge",
    "refresh_returned_charge",
    "refresh_saved_card",
    "refresh_subscription",
    "refund_annotations",
    "refund_charge",
    "refund_many",
    "refundable_amount",
    "refundable_amounts",
    "reserved_amounts",
    "reset_clients",
    "resume_subscription",
    "retry_transient",
    "scheduled_payments",
    "send_charge_request",
    "simulate_plan",
    "store_remote_charge",
    "subscription_first_charge",
    "suspend_subscription",
    "sync_charge_children",
    "sync_charges",
    "sync_charges_task",
    "sync_refunds",
    "sync_subscriptions",
    "sync_webhooks",
    "token_digest",
    "update_charge_metadata",
    "update_subscription",
    "upsert_charges",
    "wait_for_charge",
]
