"""Webhook processing through a real task backend (django-tasks-db) and its worker."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import call_command

from django_paycharge import services, tasks
from django_paycharge.models import Charge, WebhookDelivery

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "whk-background-token"


@pytest.fixture
def background(settings, fake_gateway):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    assert tasks.background_enabled()
    return fake_gateway


def test_the_view_enqueues_and_the_worker_processes(background, client):
    token = background.create_transaction_token("bank_transfer")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=800, currency="JPY")
    background.complete(str(charge.gateway_id))
    body = {
        "id": str(uuid.uuid4()),
        "event": "charge_finished",
        "data": background.charges[str(charge.gateway_id)],
    }
    response = client.post(
        "/payments/webhook/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert response.status_code == 200
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "received"  # stored and queued, not processed in the request
    assert Charge.objects.get(pk=charge.pk).status == "pending"
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    delivery.refresh_from_db()
    assert delivery.status == "processed"
    assert delivery.attempts == 1
    assert Charge.objects.get(pk=charge.pk).status == "successful"


def test_inline_mode_ignores_the_backend(background, client, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "inline"}
    assert not tasks.background_enabled()
    body = {"id": "d-inline", "event": "token_created", "data": {}}
    client.post(
        "/payments/webhook/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert WebhookDelivery.objects.get().status == "ignored"


def test_background_mode_without_a_backend_is_a_clear_error(settings):
    from django_paycharge.exceptions import ConfigurationError

    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "background"}
    if hasattr(settings, "TASKS"):
        del settings.TASKS
    with pytest.raises(ConfigurationError, match="no task backend"):
        tasks.background_enabled()


@pytest.mark.parametrize(
    "backend",
    [
        "django.tasks.backends.immediate.ImmediateBackend",
        "django_tasks.backends.dummy.DummyBackend",
    ],
)
def test_auto_mode_does_not_count_immediate_or_dummy_backends(settings, backend):
    settings.TASKS = {"default": {"BACKEND": backend}}
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "auto"}
    assert not tasks.background_enabled()
