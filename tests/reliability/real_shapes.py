"""Payloads shaped like the gateway's recorded answers in its official SDKs' test suites.

Our own ids and values, their shapes: which fields are there, which are
missing, null or odd. Where each shape comes from:

- ``LIST_ITEM``: a charge of a list page in the Java SDK's recorded
  subscription answers (``redirect`` an empty object, ``three_ds`` with a
  ``redirect_id``, ``total_hits`` on the page).
- ``WEBHOOK_DATA``: the charge of a ``charge_finished`` delivery in the PHP
  SDK's webhook tests: no ``only_direct_currency``, ``subscription_id``,
  ``fee_*``, ``capture_at``, ``redirect`` or ``three_ds``; an extra ``type``.
- ``CREATED_WITH_METADATA``: the Java SDK's create answer with metadata:
  ``test_mode`` instead of ``mode``, ``created_on`` null, metadata holding a
  list and a fraction, no token fields at all.
- ``ONLINE_CREATED``: the Java SDK's online charge: ``mode`` ``live_test``
  (a value the spec does not list), a +09:00 creation time.
- ``THREE_DS_PENDING``: the Java SDK's 3-D Secure charge with the fields the
  spec does not name (``platform_id``, ``merchant_id``, ``ledger_id``,
  ``client_metadata_id``, ``updated_on``, ``type``).
- ``DOCUMENTED``: the client SDKs' documented example: every field, an
  ``error`` with an integer code.

Webhook configurations:

- ``WEBHOOK_NODE``: the Node SDK's fixture: no ``active``, ``platform_id``,
  ``updated_on`` or ``is_integration``.
- ``WEBHOOK_LISTED``: a listed configuration of the client SDKs' docs with
  ``auth_token`` null.
- ``WEBHOOK_READ``: the docs' single read: id, store, merchant, triggers,
  url, active only.
"""

from __future__ import annotations

from typing import Any

STORE = "11111111-1111-4111-8111-111111111111"
TOKEN = "565f4106-ee07-4853-a4a0-df810e7ce9a7"

LIST_ITEM: dict[str, Any] = {
    "id": "c3b3fc88-60ea-4f2f-a2b6-825a834e5ade",
    "store_id": STORE,
    "transaction_token_id": TOKEN,
    "transaction_token_type": "subscription",
    "subscription_id": "11ef9545-7352-3c50-91f2-af8a0b26ebb5",
    "merchant_transaction_id": None,
    "requested_amount": 10000,
    "requested_currency": "JPY",
    "requested_amount_formatted": 10000,
    "charged_amount": 10000,
    "charged_currency": "JPY",
    "charged_amount_formatted": 10000,
    "fee_amount": None,
    "fee_currency": None,
    "fee_amount_formatted": None,
    "only_direct_currency": True,
    "capture_at": None,
    "descriptor": None,
    "descriptor_phone_number": None,
    "status": "successful",
    "error": None,
    "metadata": {"test-key": "123456"},
    "mode": "live",
    "created_on": "2024-10-28T15:58:19.182366Z",
    "redirect": {},
    "three_ds": {"redirect_endpoint": None, "redirect_id": None, "mode": "normal"},
}

WEBHOOK_DATA: dict[str, Any] = {
    "id": "11e756f4-ed34-6152-970d-77c75a0f7890",
    "store_id": STORE,
    "transaction_token_id": "11e756f4-e9dc-2c56-970b-2f1c78640cc7",
    "transaction_token_type": "one_time",
    "requested_amount": 100,
    "requested_currency": "JPY",
    "requested_amount_formatted": 100,
    "charged_amount": 100,
    "charged_currency": "JPY",
    "charged_amount_formatted": 100,
    "status": "successful",
    "error": None,
    "metadata": {"orderId": 123456, "someString": "abcdefg"},
    "mode": "test",
    "type": "normal",
    "created_on": "2017-06-22T02:46:00.972639Z",
}

CREATED_WITH_METADATA: dict[str, Any] = {
    "id": "425e88b7-b588-4247-80ee-0ea0caff1190",
    "store_id": STORE,
    "requested_amount": 1000,
    "requested_currency": "JPY",
    "charged_amount": None,
    "charged_currency": None,
    "status": "pending",
    "error": None,
    "metadata": {"number": 10, "string": "string", "array": ["1", "2"], "float": 10.3},
    "test_mode": True,
    "created_on": None,
}

ONLINE_CREATED: dict[str, Any] = {
    "id": "11ec8336-de56-9a4c-935e-6f39db819b28",
    "store_id": STORE,
    "transaction_token_id": "11ec8336-dd10-c8b1-89f7-55d3da73e140",
    "transaction_token_type": "one_time",
    "subscription_id": None,
    "merchant_transaction_id": None,
    "requested_amount": 1000,
    "requested_currency": "JPY",
    "requested_amount_formatted": 1000,
    "charged_amount": None,
    "charged_currency": None,
    "charged_amount_formatted": None,
    "only_direct_currency": False,
    "capture_at": None,
    "descriptor": None,
    "descriptor_phone_number": None,
    "status": "pending",
    "error": None,
    "metadata": {},
    "mode": "live_test",
    "created_on": "2022-02-01T17:13:42.467203+09:00",
}

THREE_DS_PENDING: dict[str, Any] = {
    **ONLINE_CREATED,
    "id": "11efdfaf-1e1d-899c-9c99-8718c995d6c0",
    "transaction_token_type": "recurring",
    "requested_amount": 100,
    "requested_amount_formatted": 100,
    "fee_amount": None,
    "fee_currency": None,
    "fee_amount_formatted": None,
    "mode": "test",
    "created_on": "2025-01-31T08:41:08.925809Z",
    "redirect": {},
    "three_ds": {
        "redirect_endpoint": "https://shop.example/three-ds-return",
        "redirect_id": "11efdfaf-1e2d-2367-a000-031ce1aa135d",
        "mode": "normal",
    },
    "platform_id": "11e73ea1-d72c-8ce2-996d-4bb6671eb667",
    "merchant_id": "11e75262-6cfe-e5ac-ad8c-0f520f83eceb",
    "ledger_id": None,
    "client_metadata_id": "11efdfaf-1e1c-cf27-942d-578966d41da7",
    "updated_on": "2025-01-31T08:41:08.925809Z",
    "type": "normal",
}

DOCUMENTED: dict[str, Any] = {
    **LIST_ITEM,
    "id": "6efb4e5c-690a-40f3-a4f1-0e19c5f84e98",
    "merchant_transaction_id": "ORD-998877",
    "fee_amount": 30,
    "fee_currency": "JPY",
    "fee_amount_formatted": 30,
    "only_direct_currency": False,
    "capture_at": "2026-04-09T07:35:50.000000Z",
    "descriptor": "PAYCHARGE TEST",
    "descriptor_phone_number": "0312345678",
    "status": "failed",
    "error": {"code": 301, "message": "Card number error.", "detail": "Failed validation."},
    "metadata": {"order_id": "12345"},
    "merchant_name": "Test Merchant",
    "store_name": "Tokyo Store",
    "redirect": {"endpoint": "https://shop.example/back", "redirect_id": STORE},
    "three_ds": {"redirect_endpoint": "https://shop.example/3ds", "mode": "normal"},
}

CHARGE_SHAPES = (
    LIST_ITEM,
    WEBHOOK_DATA,
    CREATED_WITH_METADATA,
    ONLINE_CREATED,
    THREE_DS_PENDING,
    DOCUMENTED,
)

WEBHOOK_NODE: dict[str, Any] = {
    "id": "d3e4f5a6-b7c8-4012-8ef0-123456789abc",
    "merchant_id": "01234567-89ab-4def-8123-456789abcdef",
    "store_id": STORE,
    "triggers": ["charge_finished"],
    "url": "http://fake.example",
    "created_on": "2026-04-01T00:00:00.000000Z",
}
WEBHOOK_LISTED: dict[str, Any] = {
    **WEBHOOK_NODE,
    "triggers": ["subscription_payment", "subscription_failure"],
    "url": "https://shop.example/webhooks/subscriptions",
    "auth_token": None,
    "active": True,
    "is_integration": False,
    "updated_on": "2026-04-03T08:30:00.000000Z",
}
WEBHOOK_READ: dict[str, Any] = {
    "id": WEBHOOK_NODE["id"],
    "store_id": STORE,
    "merchant_id": WEBHOOK_NODE["merchant_id"],
    "triggers": ["charge_finished"],
    "url": "https://shop.example/webhooks/payments",
    "active": True,
}
WEBHOOK_SHAPES = (WEBHOOK_NODE, WEBHOOK_LISTED, WEBHOOK_READ)
