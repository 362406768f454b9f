"""Contract: the gateway's official Python SDK drives the fake's lifecycle endpoints.

The SDK (``univapay-client-sdk``) is generated from the gateway's OpenAPI
description: if it can capture, update, refund, cancel and read 3-D Secure
issuer tokens on the fake over real HTTP, and parses every answer into its
models, the fake speaks the gateway's shapes.
"""

from __future__ import annotations

from typing import Any

from univapayclientsdk.models.cancel_create_request import CancelCreateRequest
from univapayclientsdk.models.charge_capture_request import ChargeCaptureRequest
from univapayclientsdk.models.charge_update_request import ChargeUpdateRequest
from univapayclientsdk.models.refund_create_request import RefundCreateRequest
from univapayclientsdk.univapay_client_sdk_client import UnivapayClientSdkClient

from django_paycharge.testing import CARD_THREE_DS, TEST_STORE_ID

from .official_sdk import ok


def test_capture_and_metadata_update(sdk: UnivapayClientSdkClient, fake_gateway_server: Any):
    whole = fake_gateway_server.create_charge(capture=False)["id"]
    ok(sdk.charges.capture_charge(TEST_STORE_ID, whole), 200)
    part = fake_gateway_server.create_charge(capture=False)["id"]
    body = ChargeCaptureRequest(amount=300, currency="JPY")
    ok(sdk.charges.capture_charge(TEST_STORE_ID, part, idempotency_key="cap-1", body=body), 200)
    charge = ok(sdk.charges.get_charge(TEST_STORE_ID, part), 200)
    assert (charge.status, charge.charged_amount) == ("successful", 300)
    update = ChargeUpdateRequest(metadata={"note": "gift"})
    updated = ok(sdk.charges.update_charge(TEST_STORE_ID, whole, body=update), 200)
    assert updated.metadata.additional_properties == {"note": "gift"}


def test_refunds(sdk: UnivapayClientSdkClient, fake_gateway_server: Any):
    charge = fake_gateway_server.create_charge()["id"]
    body = RefundCreateRequest(
        amount=400, currency="JPY", reason="customer_request", message="size", metadata={"k": "v"}
    )
    created = ok(sdk.refunds.create_refund(TEST_STORE_ID, charge, body, "refund-1"), 201)
    assert (created.status, created.amount, created.charge_id) == ("pending", 400, charge)
    one = ok(sdk.refunds.get_refund(TEST_STORE_ID, charge, created.id, polling=True), 200)
    assert one.status == "successful" and one.reason == "customer_request"
    listed = ok(sdk.refunds.list_refunds(TEST_STORE_ID, charge), 200)
    assert [r.id for r in listed.items] == [created.id] and listed.has_more is False


def test_cancels(sdk: UnivapayClientSdkClient, fake_gateway_server: Any):
    charge = fake_gateway_server.create_charge(capture=False)["id"]
    body = CancelCreateRequest(metadata={"why": "stock"})
    created = ok(sdk.cancels.create_cancel(TEST_STORE_ID, charge, "cancel-1", body), 201)
    assert created.status == "pending" and created.charge_id == charge
    one = ok(sdk.cancels.get_cancel(TEST_STORE_ID, charge, created.id), 200)
    assert one.status == "successful"
    assert one.metadata.additional_properties == {"why": "stock"}
    listed = ok(sdk.cancels.list_cancels(TEST_STORE_ID, charge), 200)
    assert [c.id for c in listed.items] == [created.id]
    assert ok(sdk.charges.get_charge(TEST_STORE_ID, charge), 200).status == "canceled"


def test_three_ds_issuer_token(sdk: UnivapayClientSdkClient, fake_gateway_server: Any):
    token = fake_gateway_server.create_transaction_token("card", card_number=CARD_THREE_DS)
    charge = fake_gateway_server.create_charge(
        token["id"], three_ds={"redirect_endpoint": "https://shop.example/3ds", "mode": "normal"}
    )["id"]
    assert ok(sdk.charges.get_charge(TEST_STORE_ID, charge), 200).status == "awaiting"
    issuer = ok(sdk.charges.get_charge_three_ds_issuer_token(TEST_STORE_ID, charge), 200)
    assert (issuer.payment_type, issuer.call_method) == ("card", "http_post")
    assert issuer.issuer_token.startswith(fake_gateway_server.base_url)
    assert issuer.content_type.startswith("application/x-www-form-urlencoded")
    assert set(issuer.payload.additional_properties) == {"charge_id", "message_type", "signature"}
