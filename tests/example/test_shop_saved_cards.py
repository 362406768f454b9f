"""The example shop's saved card and a subscription's card change, as real processes (no browser).

The fake gateway's HTTP server and one shop server (``tests/reliability/shop_stack.py``),
driven as checkout.js and saved_card.js drive them: a customer saves their card (a
``recurring`` token) at one checkout and pays the next order with it in one step, once
however often the button is pressed; when the store asks the card's security code, the
page asks it and the browser gives it to the gateway, never to the shop. A subscription's
card is changed from its order page; an ended subscription says why not.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.db import connection

from tests.pg_databases import new_postgres_database
from tests.reliability.shop_stack import Customer, Stack, start_stack
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("shop")
    sqlite = connection.vendor == "sqlite"
    url = f"sqlite:///{data / 'shop.sqlite3'}" if sqlite else new_postgres_database("shop_card")
    stack = start_stack(data, url, shops=1)
    yield stack
    stack.stop()


def _products(shop: Stack) -> dict[str, int]:
    found: dict[str, int] = shop.query(
        "import json; from shop.models import Product; print(json.dumps({"
        "'once': Product.objects.filter(period='').first().pk, "
        "'monthly': Product.objects.get(period='monthly').pk}))"
    )
    return found


def _order(shop: Stack, public_id: str) -> dict[str, Any]:
    found: dict[str, Any] = shop.query(
        "import json; from shop.models import Order; "
        f"o = Order.objects.select_related('charge', 'subscription').get(public_id='{public_id}'); "
        "print(json.dumps({'status': o.status, "
        "'charge': str(o.charge.gateway_id) if o.charge else None, "
        "'subscription': str(o.subscription.gateway_id) if o.subscription else None}))"
    )
    return found


def _saved_cards(shop: Stack) -> list[str]:
    found: list[str] = shop.query(
        "import json; from shop.models import SavedCard; "
        "print(json.dumps([str(t) for t in SavedCard.objects.values_list('token_id', flat=True)]))"
    )
    return found


def _token(customer: Customer, token_type: str) -> str:
    """A token as checkout.js makes it when the customer ticks "save this card"."""
    return customer.token(token_type=token_type)


def _pay(customer: Customer, order: str, token: str, saved: str) -> requests.Response:
    return customer.session.post(
        f"{customer.shop}/orders/{order}/pay/",
        data={
            "transaction_token_id": token,
            "saved_card_token_id": saved,
            "csrfmiddlewaretoken": customer.csrf(),
        },
        allow_redirects=False,
        timeout=120,
    )


def _pay_saved(customer: Customer, order: str, cvv_given: bool = False) -> requests.Response:
    return customer.session.post(
        f"{customer.shop}/orders/{order}/pay/saved-card/",
        data={"cvv_given": "1" if cvv_given else "", "csrfmiddlewaretoken": customer.csrf()},
        allow_redirects=False,
        timeout=120,
    )


def _checkout(customer: Customer, order: str) -> str:
    page = customer.session.get(f"{customer.shop}/orders/{order}/checkout/", timeout=30)
    assert page.status_code == 200
    return page.text


def _give_cvv(shop: Stack, token: str, cvv: str = "123") -> None:
    """saved_card.js's call: the security code to the gateway with the widget's JWT."""
    answer = requests.patch(
        f"{shop.gateway_url}/stores/{shop.env['PAYCHARGE_STORE_ID']}/tokens/{token}",
        json={"data": {"cvv": cvv}},
        headers={"Authorization": f"Bearer {shop.env['PAYCHARGE_JWT']}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text


def _control(shop: Stack, name: str, required: bool) -> None:
    answer = requests.post(
        f"{shop.gateway_url}/_fake/{name}", json={"required": required}, timeout=30
    )
    assert answer.status_code == 200, answer.text


def _charges_of(shop: Stack, token: str) -> list[dict[str, Any]]:
    return [c for c in shop.remote_charges() if c.get("transaction_token_id") == token]


def test_a_saved_card_pays_the_next_order_in_one_step_once(shop: Stack) -> None:
    products = _products(shop)
    customer = Customer(shop, shop.shop_urls[0])
    first = customer.place_order(products["once"])
    assert 'name="save_card"' in _checkout(customer, first)
    assert 'id="saved-card-form"' not in _checkout(customer, first)  # nothing saved yet
    token = _token(customer, "recurring")
    assert _pay(customer, first, token, token).status_code == 302
    assert _order(shop, first)["status"] == "paid"
    assert token in _saved_cards(shop)

    second = customer.place_order(products["once"])
    page = _checkout(customer, second)
    assert 'id="saved-card-form"' in page and "ending 4242" in page
    assert 'id="saved-card-cvv"' not in page  # the store does not ask the code
    answers = [_pay_saved(customer, second) for _ in range(2)]  # a double click
    assert [a.status_code for a in answers] == [302, 302]
    paid = _order(shop, second)
    assert paid["status"] == "paid"
    assert [c["id"] for c in _charges_of(shop, token)].count(paid["charge"]) == 1
    assert len(_charges_of(shop, token)) == 2  # the first order's and this one's

    # Another browser has no saved card; a subscription is not offered one.
    stranger = Customer(shop, shop.shop_urls[0])
    assert 'id="saved-card-form"' not in _checkout(stranger, stranger.place_order())
    monthly = customer.place_order(products["monthly"])
    assert 'id="saved-card-form"' not in _checkout(customer, monthly)


def test_the_security_code_is_asked_when_the_store_requires_it(shop: Stack) -> None:
    products = _products(shop)
    customer = Customer(shop, shop.shop_urls[0])
    _control(shop, "cvv_authorization", True)
    _control(shop, "cvv_confirmation", True)
    try:
        first = customer.place_order(products["once"])
        token = _token(customer, "recurring")
        _give_cvv(shop, token)  # the first charge is given the code typed with the card
        assert _pay(customer, first, token, token).status_code == 302
        assert _order(shop, first)["status"] == "paid"

        second = customer.place_order(products["once"])
        page = _checkout(customer, second)
        field = re.search(r'<input id="saved-card-cvv"[^>]*>', page)
        assert field and "name=" not in field.group(0)  # never carried to the shop
        refused = _pay_saved(customer, second)  # no code given: the gateway refuses
        assert refused.status_code == 400
        assert "security code" in refused.text and 'id="saved-card-cvv"' in refused.text
        assert _order(shop, second)["status"] == "new"
        _give_cvv(shop, token)
        assert _pay_saved(customer, second, cvv_given=True).status_code == 302
        assert _order(shop, second)["status"] == "paid"
    finally:
        _control(shop, "cvv_authorization", False)
        _control(shop, "cvv_confirmation", False)


def test_a_deleted_saved_card_is_no_longer_offered(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    products = _products(shop)
    first = customer.place_order(products["once"])
    token = _token(customer, "recurring")
    assert _pay(customer, first, token, token).status_code == 302
    store = shop.env["PAYCHARGE_STORE_ID"]
    assert shop.gateway("DELETE", f"/stores/{store}/tokens/{token}").status_code == 204
    shop.deliveries()  # recurring_token_deleted reaches the shop's receiver
    wait_until(
        lambda: token not in _saved_cards(shop), "the deleted card forgotten", diagnose=shop.report
    )
    assert 'id="saved-card-form"' not in _checkout(customer, customer.place_order())


def _subscribe(shop: Stack, customer: Customer) -> tuple[str, str]:
    """A subscription signed up with the card saved beside it (two tokens, as checkout.js)."""
    order = customer.place_order(_products(shop)["monthly"])
    saved = _token(customer, "recurring")
    answer = _pay(customer, order, _token(customer, "subscription"), saved)
    assert answer.status_code == 302, answer.text[:500]
    shop.deliveries()
    wait_until(lambda: _order(shop, order)["status"] == "paid", "the first payment")
    return order, saved


def test_a_subscription_card_is_changed_and_an_ended_one_says_why_not(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order, saved = _subscribe(shop, customer)
    assert saved in _saved_cards(shop)  # kept beside the subscription
    page = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert f"/orders/{order}/card/" in page
    form = customer.session.get(f"{customer.shop}/orders/{order}/card/", timeout=30)
    assert form.status_code == 200 and 'data-token-type="subscription"' in form.text
    key = re.search(r'name="key" value="([0-9a-f-]{36})"', form.text)
    assert key
    new_token = _token(customer, "subscription")

    def change() -> requests.Response:
        return customer.session.post(
            f"{customer.shop}/orders/{order}/card/",
            data={
                "transaction_token_id": new_token,
                "key": key.group(1),
                "csrfmiddlewaretoken": customer.csrf(),
            },
            allow_redirects=False,
            timeout=60,
        )

    assert [change().status_code for _ in range(2)] == [302, 302]  # a double submit: one
    subscription = _order(shop, order)["subscription"]
    store = shop.env["PAYCHARGE_STORE_ID"]
    remote = shop.gateway("GET", f"/stores/{store}/subscriptions/{subscription}").json()
    assert remote["transaction_token_id"] == new_token

    shop.query(
        "from django_paycharge import services; from django_paycharge.models import Subscription; "
        f"services.cancel_subscription(Subscription.objects.get(gateway_id='{subscription}')); "
        "print('null')"
    )
    shown = customer.session.get(f"{customer.shop}/orders/{order}/card/", timeout=30).text
    assert 'id="card-change-refused"' in shown and "has ended" in shown
    assert 'id="checkout"' not in shown
    again = customer.session.post(
        f"{customer.shop}/orders/{order}/card/",
        data={
            "transaction_token_id": _token(customer, "subscription"),
            "key": str(uuid.uuid4()),
            "csrfmiddlewaretoken": customer.csrf(),
        },
        allow_redirects=False,
        timeout=60,
    )
    assert again.status_code == 409 and "has ended" in again.text
    assert (
        f"/orders/{order}/card/"
        not in customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    )
