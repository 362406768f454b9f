"""Cross-account tokens: every account's token presented at every account's webhook URL.

Three accounts, each with two configured tokens (rotation) and a synced
webhook configuration's token, presented bare and as ``Bearer``, with the
same delivery ids sent to every account. A token is accepted at its own
account's URL only, a delivery is stored under the account whose URL it
reached, and the same delivery id at two accounts gives two deliveries.
"""

from __future__ import annotations

import json
import uuid
from itertools import product

import pytest
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import WebhookConfiguration, WebhookDelivery

pytestmark = pytest.mark.django_db

ACCOUNTS = ("default", "tokyo", "osaka")


def url(account: str) -> str:
    return "/payments/webhook/" if account == "default" else f"/payments/webhook/{account}/"


@pytest.fixture
def tokens(settings, fake_gateway):
    configured = {a: [f"whk-{a}-{n}-{uuid.uuid4().hex}" for n in (1, 2)] for a in ACCOUNTS}
    synced = {a: f"whk-synced-{a}-{uuid.uuid4().hex}" for a in ACCOUNTS}
    credentials = fake_gateway.settings()
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": configured["default"],
        "ACCOUNTS": {
            a: {**credentials, "WEBHOOK_AUTH_TOKENS": configured[a]} for a in ACCOUNTS[1:]
        },
    }
    for account, token in synced.items():
        WebhookConfiguration.objects.create(
            gateway_id=uuid.uuid4(), account=account, url=f"https://shop.example{url(account)}",
            auth_token_digest=services.token_digest(token), synced_at=timezone.now(),
        )  # fmt: skip
    return {a: [*configured[a], synced[a]] for a in ACCOUNTS}


def test_a_token_never_opens_another_accounts_url(tokens, client, reliability_record):
    damage = {
        "accepted_at_another_account": 0,
        "stored_under_another_account": 0,
        "refused_at_its_own_account": 0,
        "deduped_across_accounts": 0,
        "5xx": 0,
    }
    cases = 0
    delivery_ids = [str(uuid.uuid4()) for _ in range(3)]
    presented = [
        (owner, header)
        for owner, owned in tokens.items()
        for token in owned
        for header in (f"Bearer {token}", token)
    ]
    for (owner, header), target, delivery_id in product(presented, ACCOUNTS, delivery_ids):
        body = {"id": delivery_id, "event": "a_later_event", "data": {}}
        response = client.post(
            url(target), data=json.dumps(body), content_type="application/json",
            HTTP_AUTHORIZATION=header,
        )  # fmt: skip
        cases += 1
        damage["5xx"] += response.status_code >= 500
        if target != owner:
            damage["accepted_at_another_account"] += response.status_code != 401
            continue
        damage["refused_at_its_own_account"] += response.status_code != 200
        mine = WebhookDelivery.objects.filter(account=target, delivery_id=delivery_id)
        damage["stored_under_another_account"] += not mine.exists()
    for account in ACCOUNTS:
        stored = WebhookDelivery.objects.filter(account=account)
        # Each account got each delivery id, once.
        damage["deduped_across_accounts"] += stored.count() != len(delivery_ids)
    reliability_record(
        "Cross-account webhook tokens",
        "3 accounts x (2 configured tokens + 1 synced configuration's token), each presented "
        "bare and as Bearer at every account's webhook URL, with the same 3 delivery ids at "
        "every account",
        cases,
        damage,
        note=f"{WebhookDelivery.objects.count()} deliveries stored: each id once per account",
    )
