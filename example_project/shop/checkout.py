"""The checkout page's context: the gateway's address, the widget's JWT, the script's texts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext as _

from django_paycharge import conf

from .models import Order
from .saved_cards import offer

#: Online wallet brands offered, with how each brand's payment page is opened: a form
#: POST, or (one messaging wallet) a plain GET. The fake gateway accepts any brand name.
WALLET_BRANDS = [
    ("paypay", "PayPay", "http_post"),
    ("au_pay", "au PAY", "http_post"),
    ("merpay", "merpay", "http_post"),
    ("line_pay", "LINE Pay", "http_get"),
]
CONVENIENCE_STORES = [
    ("seven_eleven", "7-Eleven"),
    ("family_mart", "FamilyMart"),
    ("lawson", "LAWSON"),
]


def field_labels() -> dict[str, str]:
    """The gateway's names of the payment details, in words a customer recognises."""
    return {
        "email": _("email"),
        "data.card_number": _("card number"),
        "data.exp_month": _("expiry month"),
        "data.exp_year": _("expiry year"),
        "data.cvv": _("security code"),
        "data.cardholder": _("name on the card"),
        "data.customer_name": _("your name"),
        "data.convenience_store": _("convenience store"),
        "data.brand": _("wallet"),
    }


def rejected_message(fields: Iterable[str]) -> str:
    """Why the payment details were refused, naming only fields the customer filled in.

    Anything else (``transaction_token_id`` for a token that is not one) is the
    shop's or the gateway's business: the customer just starts again.
    """
    labels = field_labels()
    names = list(dict.fromkeys(labels[f] for f in fields if f in labels))
    if not names:
        return _("The payment details were not accepted. Please enter them again.")
    return _("Please check your payment details: %(fields)s.") % {"fields": ", ".join(names)}


def script_texts() -> dict[str, Any]:
    """Translated texts for checkout.js (delivered with ``json_script``, not inline code)."""
    return {
        "working": _("Processing your payment…"),
        "unreachable": _(
            "We could not reach the payment service. Nothing was charged; please try again."
        ),
        "rejected": _("Please check your payment details: %(fields)s."),
        "failed": _("The payment service refused the payment details. Please try again."),
        "fields": field_labels(),
        "reasons": {"CARD_EXPIRED": _("This card has expired. Please use another card.")},
        "cvv": _("Please enter your card's security code (3 or 4 digits)."),
    }


def checkout_context(request: HttpRequest, order: Order) -> dict[str, Any]:
    """The checkout template's context.

    The JWT is a browser app token's (``PAYCHARGE["WIDGET_JWT"]``), made for
    widgets: it can create transaction tokens and give a saved card's security code
    (``saved_card.js``), nothing else. The server's app token (its JWT and secret)
    never leaves the server.

    ``saved_card``: the customer's saved card, offered to pay a one-off order in one step
    (a subscription is paid by a token of its own type).
    """
    saved_card = None if order.product.is_subscription else offer(request)
    return {
        "order": order,
        "gateway_url": settings.PAYCHARGE["BASE_URL"],
        "widget_jwt": conf.widget_jwt(),
        "texts": script_texts(),
        "wallet_brands": WALLET_BRANDS,
        "convenience_stores": CONVENIENCE_STORES,
        "demo": settings.SHOP_DEMO_BANK,
        "saved_card": saved_card,
        "ask_cvv": saved_card is not None and saved_card.asks_cvv,
    }
