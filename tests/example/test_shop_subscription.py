"""The example shop's monthly subscription, as real processes (no browser).

The fake gateway's HTTP server and one shop server (``tests/reliability/shop_stack.py``):
a customer subscribes through the shop's pay form with a ``subscription`` token (as
checkout.js makes it), staff move the fake's clock with the shop's demo button, the
renewals come back by webhook, and each becomes an order; heard again, none makes a
second one. Suspend and cancel reach the sign-up order as notes.

On the same stack (one start for both), the customer's cards, driven as checkout.js and
saved_card.js drive them: a customer saves their card (a ``recurring`` token) at one
checkout and pays the next order with it in one step, once however often the button is
pressed; when the store asks the card's security code, the page asks it and the browser
gives it to the gateway, never to the shop. A subscription's card is changed from its
order page; an ended subscription says why not.
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
from tests.reliability.shop_stack import CARD, Customer, Stack, start_stack
from tests.waiting import wait_until

DECLINED = {**CARD, "card_number": "4000000000000002"}
THREE_DS = {**CARD, "card_number": "4000000000003220"}
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("shop")
    sqlite = connection.vendor == "sqlite"
    url = f"sqlite:///{data / 'shop.sqlite3'}" if sqlite else new_postgres_database("shop_sub")
    stack = start_stack(data, url, shops=1)
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def staff(shop: Stack) -> requests.Session:
    """A staff member logged in to the shop (a demo admin of their own)."""
    printed = shop.manage("shop_demo_setup", "--username", "staff")
    password = re.search(r"password '([^']+)'", printed)
    assert password, printed
    session = requests.Session()
    login = shop.shop_urls[0] + "/admin/login/"
    session.get(login, timeout=30)
    answer = session.post(
        login,
        data={
            "username": "staff",
            "password": password.group(1),
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
            "next": "/admin/",
        },
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 302, answer.text[:500]
    return session


def _product(shop: Stack) -> int:
    pk: int = shop.query(
        "import json; from shop.models import Product; "
        "print(json.dumps(Product.objects.get(period='monthly').pk))"
    )
    return pk


def _order(shop: Stack, public_id: str) -> dict[str, Any]:
    code = f"""
import json
from shop.models import Order
o = Order.objects.select_related("subscription", "charge").get(public_id="{public_id}")
print(json.dumps({{
    "pk": o.pk, "status": o.status, "note": o.subscription_note,
    "subscription": str(o.subscription.gateway_id) if o.subscription else None,
    "charge": str(o.charge.gateway_id) if o.charge else None,
    "renewals": [[str(r.charge.gateway_id), r.amount, r.status, r.pk]
                 for r in o.renewals.select_related("charge").order_by("pk")],
}}))
"""
    found: dict[str, Any] = shop.query(code)
    return found


def _settled(shop: Stack, public_id: str, what: str, check: Any) -> dict[str, Any]:
    """The order once the fake's webhooks are delivered and ``check`` holds."""
    shop.deliveries()

    def settled() -> dict[str, Any] | None:
        order = _order(shop, public_id)
        return order if check(order) else None

    found = wait_until(
        settled, what, diagnose=lambda: f"{_order(shop, public_id)}\n{shop.report()}"
    )
    assert found is not None
    return found


def _subscribe(shop: Stack, customer: Customer, card: dict[str, Any] | None = None) -> str:
    order = customer.place_order(_product(shop))
    page = customer.session.get(f"{customer.shop}/orders/{order}/checkout/", timeout=30).text
    assert 'data-token-type="subscription"' in page  # checkout.js asks for this type
    # Card and konbini pay a subscription (the gateway's subscribable types); never these.
    assert 'value="konbini"' in page
    assert 'value="bank_transfer"' not in page and 'value="online"' not in page
    answer = customer.pay(order, customer.token(card, token_type="subscription"))
    assert answer.status_code == 302, answer.text[:500]
    assert answer.headers["Location"] == f"/orders/{order}/"
    return order


def _move_clock(staff: requests.Session, shop_url: str, order: str) -> None:
    page = staff.get(f"{shop_url}/orders/{order}/", timeout=30)
    assert 'id="demo-clock-button"' in page.text
    answer = staff.post(
        f"{shop_url}/demo/clock/{order}/",
        data={"csrfmiddlewaretoken": staff.cookies["csrftoken"]},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text[:500]  # the order page, after the redirect
    assert "moved a month ahead" in answer.text


def test_a_subscription_is_paid_then_each_month_makes_an_order(
    shop: Stack, staff: requests.Session
) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order = _subscribe(shop, customer)
    paid = _settled(
        shop, order, "the first payment paid the order", lambda o: o["status"] == "paid"
    )
    assert paid["subscription"] and paid["charge"] and paid["renewals"] == []
    page = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert 'id="subscription-status" data-status="current"' in page
    assert re.search(r'id="next-payment" data-date="\d{4}-\d\d-\d\d"', page)
    assert 'id="demo-clock-button"' not in page  # the customer is not staff

    # A second submit of the same token joins the first subscription.
    again = customer.pay(order, customer.token(token_type="subscription"))
    assert again.status_code == 302
    made = shop.gateway("GET", "/subscriptions", params={"limit": 100}).json()["items"]
    assert [s["id"] for s in made].count(paid["subscription"]) == 1
    assert (
        sum(1 for s in made if (s.get("metadata") or {}).get("subscription_order") == paid["pk"])
        == 1
    )

    _move_clock(staff, shop.shop_urls[0], order)
    once = _settled(shop, order, "a renewal order", lambda o: len(o["renewals"]) == 1)
    _move_clock(staff, shop.shop_urls[0], order)
    twice = _settled(shop, order, "a second renewal order", lambda o: len(o["renewals"]) == 2)
    charges = shop.gateway(
        "GET",
        f"/stores/{shop.env['PAYCHARGE_STORE_ID']}/subscriptions/{paid['subscription']}/charges",
    ).json()["items"]
    renewal_charges = {c["id"] for c in charges} - {paid["charge"]}
    assert {r[0] for r in twice["renewals"]} == renewal_charges
    assert once["renewals"][0] == twice["renewals"][0]
    assert all(r[1:3] == [1500, "paid"] for r in twice["renewals"])
    listed = staff.get(f"{shop.shop_urls[0]}/admin/shop/order/", timeout=30)
    assert listed.status_code == 200
    for renewal in twice["renewals"]:
        assert f"/admin/shop/order/{renewal[3]}/change/" in listed.text
    shown = staff.get(f"{shop.shop_urls[0]}/orders/{order}/", timeout=30).text
    assert shown.count("<li data-order=") == 2


def test_a_declined_first_payment_fails_the_order_and_another_card_subscribes(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order = _subscribe(shop, customer, DECLINED)
    failed = _settled(shop, order, "the order failed", lambda o: o["status"] == "failed")
    page = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert f"/orders/{order}/checkout/" in page  # try again
    answer = customer.pay(order, customer.token(token_type="subscription"))
    assert answer.status_code == 302, answer.text[:500]
    paid = _settled(shop, order, "the second attempt paid", lambda o: o["status"] == "paid")
    assert paid["subscription"] != failed["subscription"]  # a new attempt, a new subscription


def test_a_renewal_heard_again_makes_no_second_order_and_each_change_is_noted(
    shop: Stack, staff: requests.Session
) -> None:
    order = _subscribe(shop, Customer(shop, shop.shop_urls[0]))
    _settled(shop, order, "the first payment", lambda o: o["status"] == "paid")
    _move_clock(staff, shop.shop_urls[0], order)
    before = _settled(shop, order, "a renewal order", lambda o: len(o["renewals"]) == 1)
    # Every paid charge of the subscription announced again, twice, as a crash's rerun or
    # a sync would: the receiver makes nothing more.
    replay = f"""
import json, uuid
from django_paycharge import signals
from django_paycharge.models import Charge, Subscription
sub = Subscription.objects.get(gateway_id="{before["subscription"]}")
for _ in range(2):
    for charge in sub.charges().filter(status="successful"):
        for given in (sub, None):
            signals.subscription_renewal_paid.send(
                sender=Subscription, subscription=given, charge=charge, event_id=uuid.uuid4()
            )
from shop.models import Order
print(json.dumps(Order.objects.filter(renewal_of__subscription=sub).count()))
"""
    assert shop.query(replay) == 1
    assert _order(shop, order) == before

    change = (
        "from django_paycharge import services; from django_paycharge.models import Subscription; "
        f"services.{{}}(Subscription.objects.get(gateway_id='{before['subscription']}'){{}})"
        "; print('null')"
    )
    # The card changed to one that declines: the next month's payment fails, and says so.
    declining = Customer(shop, shop.shop_urls[0]).token(DECLINED, token_type="subscription")
    shop.query(change.format("change_subscription_card", f", transaction_token_id='{declining}'"))
    _move_clock(staff, shop.shop_urls[0], order)
    failed = _settled(shop, order, "noted failed", lambda o: o["note"] == "renewal_failed")
    assert failed["status"] == "paid" and failed["renewals"] == before["renewals"]
    shop.query(change.format("suspend_subscription", ""))
    _settled(shop, order, "noted suspended", lambda o: o["note"] == "suspended")
    shop.query(change.format("resume_subscription", ""))
    _settled(shop, order, "the note cleared", lambda o: o["note"] == "")
    shop.query(change.format("cancel_subscription", ""))
    _settled(shop, order, "noted canceled", lambda o: o["note"] == "canceled")


def _token(shop: Stack, payment_type: str, data: dict[str, Any]) -> str:
    """A ``subscription`` token of any payment type, as checkout.js makes it."""
    answer = requests.post(
        shop.gateway_url + "/tokens",
        json={
            "payment_type": payment_type,
            "type": "subscription",
            "email": "t@example.com",
            "data": data,
        },
        headers={"Authorization": f"Bearer {shop.env['PAYCHARGE_JWT']}"},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _pay(customer: Customer, order: str, token: str, payment_type: str) -> requests.Response:
    """The pay form as checkout.js submits it: the token and the payment type chosen."""
    return customer.session.post(
        f"{customer.shop}/orders/{order}/pay/",
        data={
            "transaction_token_id": token,
            "payment_type": payment_type,
            "csrfmiddlewaretoken": customer.csrf(),
        },
        allow_redirects=False,
        timeout=120,
    )


def test_a_3ds_card_subscribes_through_the_apps_3ds_page_and_return(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order = customer.place_order(_product(shop))
    answer = _pay(customer, order, customer.token(THREE_DS, token_type="subscription"), "card")
    assert answer.status_code == 302, answer.text[:500]
    pay_page = answer.headers["Location"]
    found = re.fullmatch(r"/payments/pay/([0-9a-f-]{36})/", pay_page)
    assert found, pay_page  # the app's payment page, as for a one-off 3-D Secure charge
    charge = found.group(1)
    page = customer.session.get(customer.shop + pay_page, timeout=30)
    assert page.status_code == 200 and f"/_fake/provider/{charge}/3ds" in page.text
    fields = dict(HIDDEN.findall(page.text))
    challenge = f"{shop.gateway_url}/_fake/provider/{charge}/3ds"
    assert requests.post(challenge, data=fields, timeout=30).status_code == 200
    passed = requests.post(
        challenge + "/answer", data={**fields, "result": "pass"}, allow_redirects=False, timeout=30
    )
    assert passed.status_code == 303, passed.text[:500]
    back = customer.session.get(passed.headers["Location"], allow_redirects=False, timeout=30)
    assert back.status_code == 302 and back.headers["Location"] == f"/orders/{order}/"
    paid = _settled(shop, order, "the first payment paid", lambda o: o["status"] == "paid")
    assert paid["charge"] == charge
    shown = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert 'id="subscription-status" data-status="current"' in shown


def test_a_failed_3ds_challenge_fails_the_order_with_a_way_to_try_again(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order = customer.place_order(_product(shop))
    answer = _pay(customer, order, customer.token(THREE_DS, token_type="subscription"), "card")
    charge = answer.headers["Location"].split("/")[-2]
    page = customer.session.get(customer.shop + answer.headers["Location"], timeout=30)
    fields = dict(HIDDEN.findall(page.text))
    challenge = f"{shop.gateway_url}/_fake/provider/{charge}/3ds/answer"
    failed = requests.post(
        challenge, data={**fields, "result": "fail"}, allow_redirects=False, timeout=30
    )
    back = customer.session.get(failed.headers["Location"], allow_redirects=False, timeout=30)
    assert back.headers["Location"] == f"/orders/{order}/"
    _settled(shop, order, "the order failed", lambda o: o["status"] == "failed")
    shown = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert f"/orders/{order}/checkout/" in shown  # try again


def test_a_konbini_subscription_shows_the_store_payment_then_is_paid(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order = customer.place_order(_product(shop))
    konbini = {"customer_name": "TARO YAMADA", "convenience_store": "lawson"}
    answer = _pay(customer, order, _token(shop, "konbini", konbini), "konbini")
    assert answer.status_code == 302 and answer.headers["Location"] == f"/orders/{order}/"
    waiting = _order(shop, order)
    assert waiting["status"] == "awaiting" and waiting["charge"]
    page = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert "Pay at the convenience store" in page and "LAWSON" in page  # its instructions
    assert shop.gateway("POST", f"/_fake/charges/{waiting['charge']}/complete").status_code == 200
    _settled(shop, order, "paid at the store", lambda o: o["status"] == "paid")
    shown = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert 'id="subscription-status" data-status="current"' in shown


def test_a_bank_transfer_subscription_is_refused_before_the_gateway_is_asked(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order = customer.place_order(_product(shop))
    asked = len(shop.gateway("GET", "/_fake/requests").json()["items"])
    answer = _pay(customer, order, _token(shop, "bank_transfer", {}), "bank_transfer")
    assert answer.status_code == 400 and "not accepted" in answer.text
    log = shop.gateway("GET", "/_fake/requests").json()["items"][asked:]
    assert not [r for r in log if r["path"] == "/subscriptions"]
    assert _order(shop, order)["status"] == "new"


# -- the customer's cards: a saved card in one step, a subscription's card changed -----------


def _products(shop: Stack) -> dict[str, int]:
    found: dict[str, int] = shop.query(
        "import json; from shop.models import Product; print(json.dumps({"
        "'once': Product.objects.filter(period='').first().pk, "
        "'monthly': Product.objects.get(period='monthly').pk}))"
    )
    return found


def _saved_cards(shop: Stack) -> list[str]:
    found: list[str] = shop.query(
        "import json; from shop.models import SavedCard; "
        "print(json.dumps([str(t) for t in SavedCard.objects.values_list('token_id', flat=True)]))"
    )
    return found


def _saving_token(customer: Customer, token_type: str) -> str:
    """A token as checkout.js makes it when the customer ticks "save this card"."""
    return customer.token(token_type=token_type)


def _pay_saving(customer: Customer, order: str, token: str, saved: str) -> requests.Response:
    """The pay form as checkout.js submits it for a card the customer ticked to save."""
    return customer.session.post(
        f"{customer.shop}/orders/{order}/pay/",
        data={
            "transaction_token_id": token,
            "payment_type": "card",
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
    token = _saving_token(customer, "recurring")
    assert _pay_saving(customer, first, token, token).status_code == 302
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
        token = _saving_token(customer, "recurring")
        _give_cvv(shop, token)  # the first charge is given the code typed with the card
        assert _pay_saving(customer, first, token, token).status_code == 302
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
    token = _saving_token(customer, "recurring")
    assert _pay_saving(customer, first, token, token).status_code == 302
    store = shop.env["PAYCHARGE_STORE_ID"]
    assert shop.gateway("DELETE", f"/stores/{store}/tokens/{token}").status_code == 204
    shop.deliveries()  # recurring_token_deleted reaches the shop's receiver
    wait_until(
        lambda: token not in _saved_cards(shop), "the deleted card forgotten", diagnose=shop.report
    )
    assert 'id="saved-card-form"' not in _checkout(customer, customer.place_order())


def _subscribe_saving_the_card(shop: Stack, customer: Customer) -> tuple[str, str]:
    """A subscription signed up with the card saved beside it (two tokens, as checkout.js)."""
    order = customer.place_order(_products(shop)["monthly"])
    saved = _saving_token(customer, "recurring")
    answer = _pay_saving(customer, order, _saving_token(customer, "subscription"), saved)
    assert answer.status_code == 302, answer.text[:500]
    shop.deliveries()
    wait_until(lambda: _order(shop, order)["status"] == "paid", "the first payment")
    return order, saved


def test_a_subscription_card_is_changed_and_an_ended_one_says_why_not(shop: Stack) -> None:
    customer = Customer(shop, shop.shop_urls[0])
    order, saved = _subscribe_saving_the_card(shop, customer)
    assert saved in _saved_cards(shop)  # kept beside the subscription
    page = customer.session.get(f"{customer.shop}/orders/{order}/", timeout=30).text
    assert f"/orders/{order}/card/" in page
    form = customer.session.get(f"{customer.shop}/orders/{order}/card/", timeout=30)
    assert form.status_code == 200 and 'data-token-type="subscription"' in form.text
    key = re.search(r'name="key" value="([0-9a-f-]{36})"', form.text)
    assert key
    new_token = _saving_token(customer, "subscription")

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
            "transaction_token_id": _saving_token(customer, "subscription"),
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
