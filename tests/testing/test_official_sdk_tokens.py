"""Contract: the gateway's official Python SDK reads, lists, updates and deletes the fake's
saved cards.

``univapay-client-sdk`` parses each answer into its models over real HTTP: the fake speaks
the gateway's transaction token shapes, recurring fields included.
"""

from __future__ import annotations

from typing import Any

import pytest
from univapayclientsdk.http.auth.oauth_2 import BearerAuthCredentials
from univapayclientsdk.models.transaction_token_update_request import (
    TransactionTokenUpdateRequest,
)
from univapayclientsdk.models.transaction_token_update_request_data import (
    TransactionTokenUpdateRequestData,
)
from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID


@pytest.fixture
def sdk(fake_gateway_server: Any) -> UnivapayClientSdkClient:
    return UnivapayClientSdkClient(
        base_url=fake_gateway_server.base_url,
        bearer_auth_credentials=BearerAuthCredentials(TEST_SECRET, TEST_JWT),
    )


def ok(response: Any, status: int) -> Any:
    assert response.status_code == status, response.text
    assert response.is_success() and not response.errors
    return response.body


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
