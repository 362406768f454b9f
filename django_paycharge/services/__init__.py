"""The service layer: the only code that both calls the gateway and writes the mirror.

Every function takes explicit arguments (an ``account`` name where the gateway
is involved; the default account when None), is safe to call again, and sends
the app's signals.
"""

from .actions import recover_action_requests
from .captures import cancel_charge, capture_charge, update_charge_metadata
from .charges import (
    create_charge,
    recover_charge_requests,
    refresh_charge,
    send_charge_request,
    store_remote_charge,
    wait_for_charge,
)
from .clients import get_client, reset_clients
from .issuer_tokens import fetch_issuer_token, fetch_three_ds_issuer_token
from .lifecycle_sync import sync_charge_children, sync_refunds
from .payment_types import fill_payment_types
from .refunds import refund_charge, refundable_amount
from .sync import SyncResult, sync_charges
from .upsert import UpsertResult, upsert_charges
from .webhook_configs import matches_auth_token, sync_webhooks, token_digest

__all__ = [
    "SyncResult",
    "UpsertResult",
    "cancel_charge",
    "capture_charge",
    "create_charge",
    "fetch_issuer_token",
    "fetch_three_ds_issuer_token",
    "fill_payment_types",
    "get_client",
    "matches_auth_token",
    "recover_action_requests",
    "recover_charge_requests",
    "refresh_charge",
    "refund_charge",
    "refundable_amount",
    "reset_clients",
    "send_charge_request",
    "store_remote_charge",
    "sync_charge_children",
    "sync_charges",
    "sync_refunds",
    "sync_webhooks",
    "token_digest",
    "update_charge_metadata",
    "upsert_charges",
    "wait_for_charge",
]
