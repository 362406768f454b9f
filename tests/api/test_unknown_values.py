"""Charges the gateway sent with values missing: listed, paged and shown as null, never a 500."""

from __future__ import annotations

import uuid

import pytest

from django_paycharge.client import parse_charge
from django_paycharge.services.mirror.upsert import upsert_charges

from .conftest import API

URL = f"{API}/charges/"


def _store(count: int, **fields: object) -> set[str]:
    ids = {str(uuid.uuid4()) for _ in range(count)}
    upsert_charges([parse_charge({"id": i, **fields}) for i in ids], account="default")
    return ids


def _walk(client, direction: str) -> list[str]:
    seen: list[str] = []
    url = f"{URL}?limit=10&cursor_direction={direction}"
    while True:
        page = client.get(url)
        assert page.status_code == 200, page.content
        body = page.json()
        seen += [item["id"] for item in body["items"]]
        if not body["has_more"]:
            return seen
        url = f"{URL}?limit=10&cursor_direction={direction}&cursor={seen[-1]}"


@pytest.mark.django_db
@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_charges_without_creation_time_are_paged_once_each(staff, direction):
    unknown = _store(13)  # no created_on, no status, nothing but the id
    known = _store(12, created_on="2026-01-01T00:00:00Z", status="pending")
    seen = _walk(staff, direction)
    assert sorted(seen) == sorted(unknown | known)  # none skipped, none repeated


@pytest.mark.django_db
def test_unknown_values_render_as_null(staff):
    (charge_id,) = _store(1, status=["odd"], requested_amount="lots", store_id="store-7")
    item = staff.get(f"{URL}{charge_id}/").json()
    assert item["status"] is None
    assert item["requested_amount"] is None
    assert item["store_id"] is None
    assert item["created_on"] is None
