"""Lists: one page, and every page following has_more and the cursor."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from django_paycharge.client import PayChargeClient
from django_paycharge.exceptions import InvalidResponseError

from .conftest import BASE, MERCHANT, STORE, charge_json

LIST_URL = f"{BASE}/charges"


def _ids(n: int) -> list[str]:
    return [str(uuid.UUID(int=i + 1, version=4)) for i in range(n)]


def _page(ids: list[str], has_more: bool, **extra: Any) -> dict[str, Any]:
    return {"items": [charge_json(id=i) for i in ids], "has_more": has_more, **extra}


def _query(call: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(call.request.url).query)


def test_zero_items(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.get(LIST_URL, json=_page([], False))
    assert list(client.charges.list()) == []
    assert len(rsps.calls) == 1


def test_one_item(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    ids = _ids(1)
    rsps.get(LIST_URL, json=_page(ids, False))
    assert [str(c.id) for c in client.charges.list()] == ids
    assert len(rsps.calls) == 1


def test_exactly_one_full_page(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    ids = _ids(10)
    rsps.get(LIST_URL, json=_page(ids, False))
    assert [str(c.id) for c in client.charges.list(limit=10)] == ids
    assert len(rsps.calls) == 1
    assert _query(rsps.calls[0]) == {"limit": ["10"]}


def test_one_page_plus_one_item(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    ids = _ids(11)
    rsps.get(LIST_URL, json=_page(ids[:10], True))
    rsps.get(LIST_URL, json=_page(ids[10:], False))
    assert [str(c.id) for c in client.charges.list(limit=10, cursor_direction="asc")] == ids
    assert len(rsps.calls) == 2
    first, second = _query(rsps.calls[0]), _query(rsps.calls[1])
    assert first == {"limit": ["10"], "cursor_direction": ["asc"]}
    assert second == {"limit": ["10"], "cursor_direction": ["asc"], "cursor": [ids[9]]}


def test_three_pages_cursor_is_last_id_each_time(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    ids = _ids(25)
    rsps.get(LIST_URL, json=_page(ids[:10], True))
    rsps.get(LIST_URL, json=_page(ids[10:20], True))
    rsps.get(LIST_URL, json=_page(ids[20:], False))
    rsps.get(LIST_URL, json=_page(_ids(30)[25:], False))  # must never be asked for
    result = [str(c.id) for c in client.charges.list(limit=10)]
    assert result == ids
    assert len(rsps.calls) == 3
    cursors = [_query(c).get("cursor") for c in rsps.calls]
    assert cursors == [None, [ids[9]], [ids[19]]]


def test_iteration_is_lazy(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    ids = _ids(20)
    rsps.get(LIST_URL, json=_page(ids[:10], True))
    rsps.get(LIST_URL, json=_page(ids[10:], False))
    iterator = client.charges.list()
    assert len(rsps.calls) == 0
    next(iterator)
    assert len(rsps.calls) == 1


def test_starting_cursor_and_filters_kept_on_every_page(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    ids = _ids(12)
    start = str(uuid.uuid4())
    url = f"{BASE}/stores/{STORE}/charges"
    rsps.get(url, json=_page(ids[:10], True, total_hits=12))
    rsps.get(url, json=_page(ids[10:], False, total_hits=12))
    since = datetime(2024, 1, 1, 9, 0, tzinfo=timezone(timedelta(hours=9)))
    items = list(
        client.charges.list(
            store_id=STORE,
            limit=10,
            cursor=start,
            from_=since,
            to="2024-02-01T00:00:00Z",
            amount_from=100,
            currency="jpy",
            mode="test",
            captured=True,
            email="a@b.example",
        )
    )
    assert len(items) == 12
    first, second = _query(rsps.calls[0]), _query(rsps.calls[1])
    assert first["cursor"] == [start]
    assert second["cursor"] == [ids[9]]
    for query in (first, second):
        assert query["from"] == ["2024-01-01T09:00:00+09:00"]
        assert query["to"] == ["2024-02-01T00:00:00+00:00"]
        assert query["amount_from"] == ["100"]
        assert query["currency"] == ["JPY"]
        assert query["mode"] == ["test"]
        assert query["captured"] == ["true"]
        assert query["email"] == ["a@b.example"]


def test_from_as_plain_key(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.get(LIST_URL, json=_page([], False))
    filters: dict[str, Any] = {"from": datetime(2024, 1, 1, tzinfo=UTC)}  # a keyword in Python
    client.charges.list_page(**filters)
    assert _query(rsps.calls[0]) == {"from": ["2024-01-01T00:00:00+00:00"]}


def test_list_page_returns_one_page(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    ids = _ids(10)
    rsps.get(LIST_URL, json=_page(ids, True, total_hits=57))
    page = client.charges.list_page(limit=10)
    assert [str(c.id) for c in page.items] == ids
    assert page.has_more is True
    assert page.total_hits == 57
    assert len(rsps.calls) == 1


def test_total_hits_optional(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.get(LIST_URL, json=_page([], False))
    assert client.charges.list_page().total_hits is None


def test_has_more_with_empty_page_stops(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.get(LIST_URL, json=_page([], True))
    assert list(client.charges.list()) == []
    assert len(rsps.calls) == 1


def test_same_page_twice_is_an_error(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    ids = _ids(10)
    rsps.get(LIST_URL, json=_page(ids, True))
    with pytest.raises(InvalidResponseError):
        list(client.charges.list())
    assert len(rsps.calls) == 2


@pytest.mark.parametrize("merchant", [None, MERCHANT])
def test_webhook_list_follows_pages(
    client: PayChargeClient, rsps: responses.RequestsMock, merchant: str | None
) -> None:
    prefix = f"{BASE}/merchants/{MERCHANT}" if merchant else BASE
    url = f"{prefix}/stores/{STORE}/webhooks"
    ids = _ids(11)

    def hook(i: str) -> dict[str, Any]:
        return {"id": i, "store_id": STORE, "triggers": ["charge_finished"], "auth_token": "t"}

    rsps.get(url, json={"items": [hook(i) for i in ids[:10]], "has_more": True})
    rsps.get(url, json={"items": [hook(ids[10])], "has_more": False})
    hooks = list(client.webhooks.list(STORE, merchant_id=merchant, limit=10))
    assert [str(h.id) for h in hooks] == ids
    assert _query(rsps.calls[1]) == {"limit": ["10"], "cursor": [ids[9]]}
    page = client.webhooks.list_page(STORE, merchant_id=merchant, limit=10)
    assert [str(h.id) for h in page.items] == ids[10:]  # responses repeats its last answer
    assert _query(rsps.calls[2]) == {"limit": ["10"]}
