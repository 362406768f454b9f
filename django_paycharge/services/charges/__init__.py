"""A checkout: create a charge (on a saved card too), learn its outcome, what the customer
must do next.

Creates go through the exactly-once machine (:mod:`..lifecycle`) and store
what they learn through :mod:`..mirror`, never the other way round. Other
flows import only the names below.
"""

from __future__ import annotations

from .attempts import payment_attempt_key
from .charge_requests import CREATE
from .create import (
    MAX_MERCHANT_TRANSACTION_ID,
    MAX_STORED_INT,
    create_charge,
    has_nul,
    idempotency_key_for,
    storage_errors,
)
from .instructions import INSTRUCTED_TYPES, PaymentInstructions, payment_instructions
from .issuer_tokens import fetch_issuer_token, fetch_three_ds_issuer_token
from .outcomes import ChargeCheck, check_charge_request, send_charge_request
from .payment_types import (
    fill_new_payment_types_task,
    fill_payment_types,
    fill_payment_types_task,
    known_payment_type,
)
from .saved_cards import charge_saved_card, delete_saved_card

__all__ = [
    "CREATE",
    "INSTRUCTED_TYPES",
    "MAX_MERCHANT_TRANSACTION_ID",
    "MAX_STORED_INT",
    "ChargeCheck",
    "PaymentInstructions",
    "charge_saved_card",
    "check_charge_request",
    "create_charge",
    "delete_saved_card",
    "fetch_issuer_token",
    "fetch_three_ds_issuer_token",
    "fill_new_payment_types_task",
    "fill_payment_types",
    "fill_payment_types_task",
    "has_nul",
    "idempotency_key_for",
    "known_payment_type",
    "payment_attempt_key",
    "payment_instructions",
    "send_charge_request",
    "storage_errors",
]
