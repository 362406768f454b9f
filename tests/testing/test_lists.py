"""Charge lists: ordering, limit, cursor, direction, has_more, from/to, filters, 100k charges."""

from __future__ import annotations

from typing import Any

import pytest

from django_paycharge.testing import TEST_STORE_ID, FakeGateway

from .conftest import Gw


def _make(gw: Gw, n: int) -> list[str]:
    """n charges, returned newest first (creation order reversed)."""
    ids = [gw.handle.create_charge()["id"] for _ in range(n)]
    return ids[::-1]


def _page(gw: Gw, path: str = "/charges", **params: Any) -> dict[str, Any]:
    answer = gw.get(path, params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


@pytest.mark.parametrize("n", [0, 1, 10, 11])
def test_first_page_and_has_more(gw: Gw, n: int) -> None:
    ids = _make(gw, n)
    body = _page(gw)
    assert [c["id"] for c in body["items"]] == ids[:10]
    assert body["has_more"] is (n > 10)
    assert body["total_hits"] == n


def test_walk_every_page_with_the_cursor(gw: Gw) -> None:
    ids = _make(gw, 25)
    seen: list[str] = []
    cursor = None
    while True:
        body = _page(
            gw, f"/stores/{TEST_STORE_ID}/charges", **({"cursor": cursor} if cursor else {})
        )
        seen += [c["id"] for c in body["items"]]
        if not body["has_more"]:
            break
        cursor = body["items"][-1]["id"]
    assert seen == ids


def test_cursor_is_exclusive_and_asc_reverses(gw: Gw) -> None:
    ids = _make(gw, 12)
    after = _page(gw, cursor=ids[3])
    assert [c["id"] for c in after["items"]] == ids[4:12]
    assert after["has_more"] is False
    asc = _page(gw, cursor=ids[3], cursor_direction="asc")
    assert [c["id"] for c in asc["items"]] == ids[:3][::-1]
    oldest_first = _page(gw, cursor_direction="asc", limit=10)
    assert [c["id"] for c in oldest_first["items"]] == ids[::-1][:10]
    assert oldest_first["has_more"] is True


def test_exactly_one_full_page_then_empty(gw: Gw) -> None:
    ids = _make(gw, 10)
    assert _page(gw, cursor=ids[-1]) == {"items": [], "has_more": False, "total_hits": 10}


@pytest.mark.parametrize("limit", ["10", "55", "100"])
def test_limit_bounds_accepted(gw: Gw, limit: str) -> None:
    gw.handle.seed(120)
    body = _page(gw, limit=limit)
    assert len(body["items"]) == int(limit)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "9"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"limit": "-10"}, "limit"),
        ({"cursor_direction": "up"}, "cursor_direction"),
        ({"cursor": "11111111-0000-4000-8000-000000000000"}, "cursor"),
        ({"from": "yesterday"}, "from"),
    ],
)
def test_bad_list_parameters(gw: Gw, params: dict[str, str], field: str) -> None:
    answer = gw.get("/charges", params=params)
    assert answer.status_code == 400
    assert answer.json()["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in answer.json()["errors"]] == [field]


def test_from_inclusive_to_exclusive(gw: Gw) -> None:
    gw.handle.seed(300, seed=4)
    everything = []
    cursor = None
    while True:
        body = _page(gw, limit=100, **({"cursor": cursor} if cursor else {}))
        everything += body["items"]
        if not body["has_more"]:
            break
        cursor = body["items"][-1]["id"]
    assert len(everything) == 300
    times = [c["created_on"] for c in everything]
    assert times == sorted(times, reverse=True)
    middle = everything[150]["created_on"]
    newer = _page(gw, limit=100, **{"from": middle})
    older = _page(gw, limit=100, to=middle)
    assert newer["total_hits"] + older["total_hits"] == 300
    assert all(c["created_on"] >= middle for c in newer["items"])
    assert all(c["created_on"] < middle for c in older["items"])
    assert middle in [c["created_on"] for c in newer["items"]] or newer["has_more"]


def test_filters(gw: Gw) -> None:
    gw.handle.create_charge(currency="USD")
    gw.handle.create_charge(currency="JPY")
    token = gw.handle.create_transaction_token()["id"]
    gw.handle.create_charge(token)
    usd = _page(gw, currency="usd")
    assert [c["requested_currency"] for c in usd["items"]] == ["USD"] and usd["total_hits"] == 1
    assert len(_page(gw, transaction_token_id=token)["items"]) == 1
    assert _page(gw, mode="live")["items"] == []


def test_ties_are_broken_by_id(gw: Gw) -> None:
    gw.handle.seed(50)
    items = _page(gw, limit=100)["items"]
    keys = [(c["created_on"], c["id"]) for c in items]
    assert keys == sorted(keys, reverse=True)


def test_a_large_seed_pages_through_the_cursor_in_order() -> None:
    """Seeding and paging at scale are correct here; their speed is bench/'s (fake_server_rps)."""
    gateway = FakeGateway()
    gateway.seed(20_000)
    first = gateway.request("GET", "/charges?limit=100")  # sorts the index once
    assert first.status == 200 and first.json()["total_hits"] == 20_000
    seen = [(c["created_on"], c["id"]) for c in first.json()["items"]]
    cursor = first.json()["items"][-1]["id"]
    for _ in range(50):
        page = gateway.request("GET", f"/charges?limit=100&cursor={cursor}").json()
        seen += [(c["created_on"], c["id"]) for c in page["items"]]
        cursor = page["items"][-1]["id"]
    assert len(seen) == len(set(seen)) == 5_100
    assert seen == sorted(seen, reverse=True)  # each page goes on where the last one ended
    statuses = {c["status"] for c in page["items"]}
    assert {"successful", "failed"} <= statuses
    types = {gateway.state.charges[c["id"]].token.payment_type for c in page["items"]}
    assert len(types) >= 3


def test_seed_is_deterministic() -> None:
    a, b = FakeGateway(), FakeGateway()
    a.seed(20, seed=7)
    b.seed(20, seed=7)
    assert sorted(a.charges) == sorted(b.charges)
    a.seed(20, seed=7)
    assert len(a.charges) == 40  # a second call never repeats ids
