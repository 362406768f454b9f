"""Fixtures of the API tests: users of each kind, clients, charges in the mirror."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from django_paycharge import services
from django_paycharge.access import SESSION_KEY
from django_paycharge.models import Charge

API = "/api/payments"


@pytest.fixture(autouse=True)
def _fresh_throttles() -> None:
    # Throttle counters live in the cache, which outlives a test.
    cache.clear()


@pytest.fixture
def gateway(fake_gateway: Any, settings: Any) -> Any:
    """The in-process fake gateway, with no client retries (faults answer at once)."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    return fake_gateway


def _user(username: str, *, staff: bool = False, perms: tuple[str, ...] = ()) -> User:
    # No password: force_login needs none, and hashing one costs a third of a second.
    user = User.objects.create(username=username, is_staff=staff)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def customer(db: Any) -> APIClient:
    client = APIClient()
    client.force_login(_user("customer"))
    return client


@pytest.fixture
def staff(db: Any) -> APIClient:
    client = APIClient()
    client.force_login(_user("staff", staff=True))
    return client


@pytest.fixture
def banker(db: Any) -> APIClient:
    """Staff holding the permission to see full bank account numbers."""
    client = APIClient()
    client.force_login(_user("banker", staff=True, perms=("view_bank_account_number",)))
    return client


def own(client: APIClient, charge: Charge) -> APIClient:
    """Make ``client``'s session the owner of ``charge`` (as the create endpoint does)."""
    session = client.session
    session[SESSION_KEY] = [*session.get(SESSION_KEY, []), str(charge.gateway_id)]
    session.save()
    return client


def gateway_charge(gateway: Any, payment_type: str = "card", **token_data: Any) -> Charge:
    """A charge created through the service against the fake gateway."""
    token = gateway.create_transaction_token(payment_type, **token_data)
    return services.create_charge(transaction_token_id=token["id"], amount=1200, currency="JPY")


def mirror_charges(count: int, *, same_time: bool = False) -> list[Charge]:
    """``count`` charges in the mirror only, newest last (created one minute apart)."""
    start = timezone.now() - timedelta(days=1)
    charges = []
    for i in range(count):
        when = start if same_time else start + timedelta(minutes=i)
        charges.append(
            Charge.objects.create(
                gateway_id=uuid.uuid4(),
                status="successful",
                requested_amount=100 + i,
                requested_currency="JPY",
                fee_amount=3,
                created_on=when,
                synced_at=when,
                first_seen_at=when,
                raw={"id": "raw-payload-marker"},
            )
        )
    return charges


def assert_error(response: Any, status: int, code: str, *fields: str) -> dict[str, Any]:
    """The answer is an error in the API's shape, naming ``fields``."""
    assert response.status_code == status, response.content
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    assert isinstance(body["message"], str) and body["message"]
    named = {e["field"] for e in body["errors"]}
    assert set(fields) <= named, body
    return body
