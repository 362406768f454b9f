"""Contract: the gateway's official Python SDK reads, lists, updates and deletes the fake's
saved cards.

``univapay-client-sdk`` parses each answer into its models over real HTTP: the fake speaks
the gateway's transaction token shapes, recurring fields included.
"""

from __future__ import annotations

from univapayclientsdk.models.transaction_token_update_request import (
    TransactionTokenUpdateRequest,
)
from univapayclientsdk.models.transaction_token_update_request_data import (
    TransactionTokenUpdateRequestData,
)
from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

from django_paycharge.testing import TEST_STORE_ID

from .official_sdk import ok


def test_a_saved_card_read_listed_updated_and_deleted(
    sdk: UnivapayClientSdkClient, fake_gateway_server
):
    api = sdk.transaction_tokens
    fake_gateway_server.require_cvv_authorization()
    token = fake_gateway_server.create_transaction_token(type="recurring", usage_limit="monthly")
    one = ok(api.get_transaction_token(TEST_STORE_ID, token["id"]), 200)
    assert (one.mtype, one.usage_limit, one.active) == ("recurring", "monthly", True)
    listed = ok(api.list_store_transaction_tokens(TEST_STORE_ID, mtype="recurring"), 200)
    assert [t.id for t in listed.items] == [token["id"]]
    body = TransactionTokenUpdateRequest(
        email="new@example.com", data=TransactionTokenUpdateRequestData(cvv="123")
    )
    updated = ok(api.update_transaction_token(TEST_STORE_ID, token["id"], body=body), 200)
    assert updated.email == "new@example.com"
    ok(api.delete_transaction_token(TEST_STORE_ID, token["id"]), 204)
    assert ok(api.get_transaction_token(TEST_STORE_ID, token["id"]), 200).active is False
