from __future__ import annotations

import itertools
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import Charge
from django_paycharge.testing import CARD_DECLINED

_counter = itertools.count(1)


def charge_row(**fields):
    """An unsaved Charge with plausible values (for bulk_create and direct rows)."""
    n = next(_counter)
    now = timezone.now()
    values = {
        "gateway_id": uuid.uuid4(),
        "account": "default",
        "store_id": uuid.UUID("11111111-1111-4111-8111-111111111111"),
        "transaction_token_id": uuid.uuid4(),
        "payment_type": "card",
        "merchant_transaction_id": f"order-{n}",
        "requested_amount": 1000 + n,
        "requested_currency": "JPY",
        "status": "successful",
        "mode": "test",
        "created_on": now - timedelta(minutes=n),
        "store_name": "Fake Store",
        "raw": {"id": "x"},
        "synced_at": now,
        "first_seen_at": now,
    }
    values.update(fields)
    return Charge(**values)


@pytest.fixture
def make_charge():
    def make(**fields):
        charge = charge_row(**fields)
        charge.save()
        return charge

    return make


@pytest.fixture
def staff_user(db):
    """``staff_user("view_charge", "call_gateway")``: a staff user with those permissions."""

    def make(*codenames: str, username: str | None = None) -> User:
        # No password (hashing one is slow): the tests log in with force_login.
        user = User.objects.create_user(username or f"staff{next(_counter)}", is_staff=True)
        perms = Permission.objects.filter(
            content_type__app_label="django_paycharge", codename__in=codenames
        )
        assert perms.count() == len(codenames), codenames
        user.user_permissions.set(perms)
        return user

    return make


@pytest.fixture
def gateway_charge(fake_gateway):
    """``gateway_charge("online")``: a charge created on the fake and mirrored locally."""

    def make(payment_type: str = "card", **token_data) -> Charge:
        token = fake_gateway.create_transaction_token(payment_type, **token_data)
        created = fake_gateway.create_charge(token["id"], amount=1500)
        return services.refresh_charge(created["id"])

    return make


PASSWORD = "browser-admin-pw-123"


@pytest.fixture
def shop(fake_gateway_server):
    """A few charges on the fake gateway, mirrored locally; one konbini charge awaiting payment."""
    gateway = fake_gateway_server
    gateway.seed(24, seed=7)
    services.sync_charges()
    declined = gateway.create_transaction_token("card", card_number=CARD_DECLINED)
    failed = gateway.create_charge(
        declined["id"],
        amount=4980,
        currency="JPY",
        metadata={"order_id": "A-1002", "customer_id": 42, "gift_wrap": True},
        merchant_transaction_id="A-1002",
    )
    usd = gateway.create_charge(
        amount=1999,
        currency="USD",
        metadata={"order_id": "A-1003"},
        merchant_transaction_id="A-1003",
    )
    wallet = gateway.create_charge(
        gateway.create_transaction_token("online")["id"],
        amount=3300,
        merchant_transaction_id="A-1004",
    )
    awaiting = gateway.create_charge(
        gateway.create_transaction_token("konbini")["id"],
        amount=1200,
        metadata={"order_id": "A-1001"},
        merchant_transaction_id="A-1001",
    )
    for charge in (failed, usd, wallet, awaiting):
        services.refresh_charge(charge["id"])
    services.fetch_issuer_token(services.refresh_charge(wallet["id"]))
    User.objects.create_superuser("shopadmin", "admin@shop.example", PASSWORD)
    return {"awaiting": awaiting["id"], "failed": failed["id"]}
