"""docs/saved-cards.md's ``shop/saved_cards.py``, run as written against the fake gateway: a
returning customer pays once however often they click, a renewed card is charged under its
new token, a deleted one is no longer offered, and each receiver heard again changes nothing.

The block runs beside a stand-in for its ``shop/models.py``: a ``SavedCard`` whose
``objects.filter(token_id=...)`` updates and deletes rows kept in a dict, as the model would.
"""

from __future__ import annotations

import json
import sys
import types
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from django_paycharge import services
from django_paycharge.exceptions import BadRequestError
from django_paycharge.models import ChargeRequest, TransactionTokenInfo
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery
from django_paycharge.signals import saved_card_deleted, saved_card_replaced
from django_paycharge.testing import TEST_STORE_ID, TEST_WIDGET_JWT

from .project import REPO
from .snippets import snippets

pytestmark = pytest.mark.django_db


class _Cards:
    """``SavedCard.objects``: rows keyed by customer, ``filter(token_id=...)``."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def filter(self, *, token_id: Any) -> _Found:
        return _Found(self, str(token_id))


class _Found:
    def __init__(self, cards: _Cards, token_id: str) -> None:
        self.cards, self.token_id = cards, token_id

    def _keys(self) -> list[str]:
        return [k for k, row in self.cards.rows.items() if str(row["token_id"]) == self.token_id]

    def update(self, *, token_id: Any) -> int:
        keys = self._keys()
        for key in keys:
            self.cards.rows[key]["token_id"] = token_id
        return len(keys)

    def delete(self) -> tuple[int, dict[str, int]]:
        keys = self._keys()
        for key in keys:
            del self.cards.rows[key]
        return len(keys), {}


class _Order:
    """A saved order, as ``services.payment_attempt_key`` reads one."""

    _meta = types.SimpleNamespace(label_lower="shop.order")

    def __init__(self, pk: int, total: int) -> None:
        self.pk, self.total = pk, total


@pytest.fixture
def shop() -> Iterator[tuple[types.ModuleType, _Cards]]:
    """The guide's ``shop/saved_cards.py``, run as pasted (its receivers connected meanwhile)."""
    [body] = [
        s.body
        for s in snippets(REPO / "docs" / "saved-cards.md", REPO)
        if s.action == "file" and s.target == "shop/saved_cards.py"
    ]
    cards = _Cards()
    package = types.ModuleType("card_shop")
    package.__path__ = []
    models = types.ModuleType("card_shop.models")
    models.SavedCard = type("SavedCard", (), {"objects": cards})  # type: ignore[attr-defined]
    module = types.ModuleType("card_shop.saved_cards")
    module.__package__ = "card_shop"
    saved = {name: sys.modules.get(name) for name in ("card_shop", "card_shop.models")}
    sys.modules.update({"card_shop": package, "card_shop.models": models})
    try:
        exec(compile(body, "docs/saved-cards.md (shop/saved_cards.py)", "exec"), module.__dict__)
        yield module, cards
    finally:
        sender = TransactionTokenInfo
        saved_card_replaced.disconnect(sender=sender, dispatch_uid="shop-card-replaced")
        saved_card_deleted.disconnect(sender=sender, dispatch_uid="shop-card-deleted")
        for name, kept in saved.items():
            if kept is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = kept


def _webhook(event: str, token_id: str) -> None:
    body = {"id": str(uuid.uuid4()), "event": event, "data": {"id": token_id}}
    delivery, _ = store_delivery(body=json.dumps(body).encode(), headers={}, account="default")
    assert process_delivery(delivery.pk) == "processed"


def test_the_guides_saved_card_module(
    shop: tuple[types.ModuleType, _Cards],
    fake_gateway: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    module, cards = shop
    token = fake_gateway.create_transaction_token(type="recurring")["id"]
    cards.rows["customer-7"] = {"token_id": token}
    card = types.SimpleNamespace(token_id=token)
    order = _Order(42, 3300)
    first = module.pay_with_saved_card(order, card)
    assert module.pay_with_saved_card(order, card).pk == first.pk  # clicked twice: one charge
    assert (first.requested_amount, ChargeRequest.objects.count()) == (3300, 1)

    # The store starts asking the security code again: refused, the customer gives it from
    # the browser, and the order's next attempt charges (the refused one charged nothing).
    fake_gateway.require_cvv_confirmation()
    with pytest.raises(BadRequestError):
        module.pay_with_saved_card(_Order(44, 500), card)
    browser = {"Authorization": f"Bearer {TEST_WIDGET_JWT}"}
    path = f"/stores/{TEST_STORE_ID}/tokens/{token}"
    fake_gateway.request("PATCH", path, {"data": {"cvv": "123"}}, headers=browser)
    assert module.pay_with_saved_card(_Order(44, 500), card).requested_amount == 500
    fake_gateway.require_cvv_confirmation(False)

    renewed = fake_gateway.request(
        "POST", f"/stores/{TEST_STORE_ID}/tokens/{token}/renew", {"data": {"exp_year": 2100}}
    ).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        _webhook("token_replaced", renewed)
    assert cards.rows == {"customer-7": {"token_id": uuid.UUID(renewed)}}
    card.token_id = renewed
    assert module.pay_with_saved_card(_Order(43, 1100), card).status == "pending"

    row = TransactionTokenInfo.objects.get(token_id=renewed)
    for _ in range(2):  # heard again (a run again after a crash): nothing more changes
        module.card_replaced(TransactionTokenInfo, saved_card=row, previous_token_id=token)
    assert cards.rows == {"customer-7": {"token_id": uuid.UUID(renewed)}}

    with django_capture_on_commit_callbacks(execute=True):
        services.delete_saved_card(renewed)
        _webhook("recurring_token_deleted", renewed)
    assert cards.rows == {}
    module.card_deleted(TransactionTokenInfo, saved_card=row)  # again: harmless
