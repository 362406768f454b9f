"""A quarantined webhook configuration that can now be read is stored by the next sync."""

from __future__ import annotations

import json
import uuid

import pytest
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import QuarantinedItem, WebhookConfiguration

pytestmark = pytest.mark.django_db


def test_the_retry_stores_it_under_the_store_it_was_listed_in(fake_gateway):
    gateway_id = str(uuid.uuid4())
    payload = {"id": gateway_id, "url": "https://shop.example/payments/webhook/"}  # no store_id
    now = timezone.now()
    QuarantinedItem.objects.create(
        account="default", resource=QuarantinedItem.Resource.WEBHOOK,
        payload=json.dumps(payload), payload_digest="d" * 64, reason="an older parser refused it",
        first_seen_at=now, last_seen_at=now,
    )  # fmt: skip
    services.sync_webhooks()
    item = QuarantinedItem.objects.get()
    assert item.resolved_at is not None and str(item.resolved_id) == gateway_id
    stored = WebhookConfiguration.objects.get(gateway_id=gateway_id)
    assert str(stored.store_id) == fake_gateway.settings()["STORE_ID"]
