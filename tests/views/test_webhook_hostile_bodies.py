"""Hostile bodies are stored, not refused; every stored body displays; parse errors are 4xx."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import call_command

from django_paycharge.models import WebhookDelivery

pytestmark = pytest.mark.django_db

TOKEN = "whk-hostile-token-0123456789"
DEEP = 5000


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


#: Authenticated bodies that are no ordinary delivery: (name, body).
BODIES = [
    ("1.5 KB of [", b"[" * 1536),
    ("100 KB of [", b"[" * 100_000),
    ("object keys 5000 deep", b'{"a":' * DEEP + b"1" + b"}" * DEEP),
    ("valid JSON 900 deep", nested(900).encode()),
    ("valid JSON 5000 deep", nested(DEEP).encode()),
    (
        "event with 5000-deep data",
        json.dumps({"id": "d-deep", "event": "charge_finished"})[:-1].encode()
        + b', "data": '
        + nested(DEEP).encode()
        + b"}",
    ),
    ("charge data with 900-deep metadata", b""),  # filled in below (valid JSON, parses)
    ("NUL bytes", b'{"id": "d-nul\x00", "event": "x\x00y", "data": {}}'),
    ("invalid UTF-8", b'{"id": "d-\xff\xfe", "event": "a_later_event"}'),
    ("UTF-16", json.dumps({"id": "d-utf16", "event": "a_later_event"}).encode("utf-16")),
    ("empty", b""),
    ("huge number", b'{"id": 1e999999, "event": "a_later_event"}'),
    ("NaN", b'{"id": NaN, "event": NaN}'),
    ("lone surrogate", b'{"id": "\\ud800", "event": "\\udfff"}'),
    ("a JSON string", b'"just a string"'),
]
_META = '{"id": "d-meta", "event": "charge_finished", "data": {"id": "%s", "metadata": %s}}'
BODIES[6] = (BODIES[6][0], (_META % (uuid.uuid4(), nested(900))).encode())


@pytest.fixture
def hook(fake_gateway, settings, client):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_AUTH_TOKENS": [TOKEN]}
    return client


@pytest.mark.parametrize(("name", "body"), BODIES, ids=[b[0] for b in BODIES])
def test_any_authenticated_body_is_stored_answered_200_and_displays(hook, admin_client, name, body):
    response = hook.post(
        "/payments/webhook/", data=body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )  # fmt: skip
    assert response.status_code == 200, name
    delivery = WebhookDelivery.objects.get()
    assert delivery.status in ("failed", "processed", "ignored")
    if delivery.status == "failed":
        assert delivery.last_error  # says why
    page = admin_client.get(f"/admin/django_paycharge/webhookdelivery/{delivery.pk}/change/")
    assert page.status_code == 200
    listing = admin_client.get("/admin/django_paycharge/webhookdelivery/")
    assert listing.status_code == 200


def test_a_body_nested_too_deeply_says_so(hook):
    hook.post(
        "/payments/webhook/", data=b"[" * 1536, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )  # fmt: skip
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.last_error) == (
        "failed", "The body is nested too deeply to read.",
    )  # fmt: skip
    assert delivery.body == "[" * 1536  # kept as received


def test_retrying_stored_hostile_bodies_never_raises(hook, capsys):
    for _, body in BODIES:
        hook.post(
            "/payments/webhook/", data=body, content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        )  # fmt: skip
    with pytest.raises(Exception, match="deliveries failed"):
        call_command("paycharge_process_webhooks", "--failed")
    assert "failed" in capsys.readouterr().out
    assert not WebhookDelivery.objects.filter(status__in=["received", "processing"]).exists()


@pytest.mark.parametrize(
    "query",
    [
        "serviceChargeId=" + "[" * 1536,
        "serviceChargeId=%00%00",
        "serviceChargeId=%ff%fe",
        "serviceChargeId={" + "%7B" * 2000,
        "serviceChargeId=" + str(uuid.UUID(int=7)) + "&serviceTokenId=" + "[" * 1536,
        "serviceChargeId=" + "1" * 100_000,
        "&".join(["serviceChargeId=x"] * 500),
        "serviceChargeId=%%%",
    ],
    # Short ids, the same in every pytest-xdist worker (each collects the suite itself).
    ids=[
        "brackets",
        "NULs",
        "bad UTF-8",
        "braces",
        "an id then brackets",
        "100,000 digits",
        "500 ids",
        "bad escapes",
    ],
)
def test_the_return_view_answers_4xx_to_any_query(client, query):
    assert 400 <= client.get(f"/payments/return/?{query}").status_code < 500


def test_the_return_view_ignores_a_hostile_body(client):
    response = client.post("/payments/return/", data=b"[" * 1536, content_type="application/json")
    assert 400 <= response.status_code < 500
