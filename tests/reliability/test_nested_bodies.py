"""Nested bodies at every JSON entry point: stored or refused 4xx, never 5xx.

The webhook receiver (default and named account) must store any authenticated
body and answer 2xx; the admin must show every stored one; the DRF create
endpoint (anonymous, in the documented storefront setup, and staff) and the
customer return view must answer a clear 4xx.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from django_paycharge.models import ChargeRequest, WebhookDelivery

pytestmark = pytest.mark.django_db

TOKEN = "whk-nested-token-0123456789"
NAMED_TOKEN = "whk-nested-named-0123456789"
DEPTHS = (33, 64, 500, 900, 990, 1000, 1536, 5000, 100_000)
SHAPES = {
    "arrays, closed": lambda d: "[" * d + "]" * d,
    "arrays, unclosed": lambda d: "[" * d,
    "objects, closed": lambda d: '{"a":' * d + "1" + "}" * d,
    "inside a delivery's data": lambda d: (
        '{"id": "ID", "event": "charge_finished", "data": ' + "[" * d + "]" * d + "}"
    ),
}


RECEIVERS = (("/payments/webhook/", TOKEN), ("/payments/webhook/named/", NAMED_TOKEN))


@pytest.fixture
def shop(settings, fake_gateway):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
        "ACCOUNTS": {"named": {**fake_gateway.settings(), "WEBHOOK_AUTH_TOKENS": [NAMED_TOKEN]}},
        "API_CREATE_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
        "API_CHARGE_HOOK": "tests.api.hooks.order_amount",
        "API_CREATE_THROTTLE_CLASSES": [],  # hundreds of requests: the parser is the subject
    }
    return fake_gateway


def test_nested_bodies_at_every_entry_point(
    shop, client, admin_client, admin_user, reliability_record
):
    damage = {
        "5xx": 0,
        "authenticated_not_2xx": 0,
        "authenticated_not_stored": 0,
        "admin_page_not_200": 0,
        "api_not_400": 0,
        "return_not_4xx": 0,
    }
    staff = APIClient()
    staff.force_login(admin_user)
    cases = 0
    for make in SHAPES.values():
        for depth in DEPTHS:
            body = make(depth)
            # A varying suffix keeps every body a new delivery (no dedupe).
            for url, token in (
                ("/payments/webhook/", TOKEN),
                ("/payments/webhook/named/", NAMED_TOKEN),
            ):
                before = WebhookDelivery.objects.count()
                unique = body.replace("ID", f"d-{cases}") + " " * cases
                response = client.post(
                    url, data=unique, content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {token}",
                )  # fmt: skip
                cases += 1
                damage["5xx"] += response.status_code >= 500
                damage["authenticated_not_2xx"] += not 200 <= response.status_code < 300
                damage["authenticated_not_stored"] += WebhookDelivery.objects.count() != before + 1
            for api in (APIClient(), staff):
                response = api.post("/api/payments/charges/", body, content_type="application/json")
                cases += 1
                damage["5xx"] += response.status_code >= 500
                damage["api_not_400"] += response.status_code != 400
            for response in (
                client.get("/payments/return/", {"serviceChargeId": body[:4000]}),
                client.post("/payments/return/", data=body, content_type="application/json"),
            ):
                cases += 1
                damage["5xx"] += response.status_code >= 500
                damage["return_not_4xx"] += not 400 <= response.status_code < 500
    for delivery in WebhookDelivery.objects.all():
        page = admin_client.get(
            reverse("admin:django_paycharge_webhookdelivery_change", args=[delivery.pk])
        )
        cases += 1
        damage["5xx"] += page.status_code >= 500
        damage["admin_page_not_200"] += page.status_code != 200
    listing = admin_client.get(reverse("admin:django_paycharge_webhookdelivery_changelist"))
    damage["admin_page_not_200"] += listing.status_code != 200
    assert not ChargeRequest.objects.exists()
    stored = WebhookDelivery.objects.count()
    failed = WebhookDelivery.objects.filter(status="failed").count()
    reliability_record(
        "Nested bodies at every JSON entry point",
        f"arrays and objects nested {', '.join(map(str, DEPTHS))} levels deep (closed, "
        "unclosed, inside a delivery's data): webhook receiver (default and named account), "
        "the admin's delivery pages, the DRF create endpoint (anonymous storefront and "
        "staff), the return view",
        cases,
        damage,
        note=f"{stored} deliveries stored ({failed} as failed, with the reason); "
        "the API answers 400 parse_error",
    )
