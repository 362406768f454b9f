"""A returning customer's saved card: kept at a checkout, offered at the next, charged in one step.

- The card is the gateway's ``recurring`` transaction token, made by the checkout's widget
  when the customer ticks "save this card"; the shop keeps its id (:class:`SavedCard`), for
  the customer (:func:`customer_id`: the shop has no accounts, so a customer is a browser).
- :func:`offer` is what the checkout shows: "the card ending 4242", and whether the store
  asks the card's security code again (its CVV authorization, in the app's mirror of the
  token). The browser sends that code to the gateway itself (``saved_card.js``): it never
  reaches the shop.
- The charge is ``shop.payments.pay_order`` with ``saved=True``
  (``services.charge_saved_card``), under the order's payment attempt key, as every checkout.
- The receivers follow the gateway: a renewed card's new token replaces the old one, a
  deleted card is no longer offered (docs/saved-cards.md).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError
from django.dispatch import receiver
from django.http import HttpRequest

from django_paycharge import services
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import TransactionTokenInfo
from django_paycharge.signals import saved_card_deleted, saved_card_replaced

from .models import SavedCard

logger = logging.getLogger("shop.saved_cards")
SESSION_KEY = "shop_customer"
#: How long the pay request waits for the gateway to check a security code just given.
CVV_WAIT = 5.0


def customer_id(request: HttpRequest, *, create: bool = False) -> uuid.UUID | None:
    """This browser's customer id (kept in its session), made on first need if ``create``."""
    value = request.session.get(SESSION_KEY)
    if value is None and create:
        value = str(uuid.uuid4())
        request.session[SESSION_KEY] = value
    return uuid.UUID(value) if value else None


@dataclass(frozen=True)
class Offer:
    """The saved card as the checkout offers it."""

    token_id: uuid.UUID
    store_id: uuid.UUID | None
    brand: str
    last_four: str
    #: The store has the card's security code authorized (``cvv_authorize.enabled``):
    #: the page asks it, and the browser gives it to the gateway before the charge.
    asks_cvv: bool


def offer(request: HttpRequest) -> Offer | None:
    """The customer's saved card, if they have one that can still be charged."""
    customer = customer_id(request)
    card = SavedCard.objects.filter(customer=customer).first() if customer else None
    if card is None:
        return None
    info = TransactionTokenInfo.objects.filter(token_id=card.token_id).first()
    if info is None or info.active is False:
        return None
    return Offer(
        token_id=card.token_id,
        store_id=info.store_id,
        brand=(info.card_brand or "").upper(),
        last_four=info.card_last_four or "????",
        asks_cvv=bool(info.cvv_authorization_enabled),
    )


def keep(request: HttpRequest, token_id: str) -> bool:
    """Save the customer's new ``recurring`` token, read from the gateway first (the browser
    names it; the gateway says what it is). Replaces the customer's earlier card."""
    try:
        info = services.refresh_saved_card(token_id)
    except (PayChargeError, ValueError) as exc:
        logger.info("Card %r not saved: %s", token_id, type(exc).__name__)
        return False
    if info.type != "recurring" or info.active is False:
        return False
    if info.cvv_authorization_status == "failed":
        return False  # the card's security code was refused: it cannot be charged
    customer = customer_id(request, create=True)
    # One statement each, never a read then a write in one transaction: on SQLite in its
    # default (deferred) mode a transaction that read cannot start writing while another
    # connection writes ("database is locked" at once, no busy wait).
    try:
        if SavedCard.objects.filter(customer=customer).update(token_id=info.token_id):
            return True
        SavedCard.objects.create(customer=customer, token_id=info.token_id)
    except IntegrityError:  # another browser holds this token: not this customer's to keep
        return False
    return True


def forget(request: HttpRequest) -> None:
    """The customer's saved card can no longer be charged: stop offering it."""
    customer = customer_id(request)
    if customer is not None:
        SavedCard.objects.filter(customer=customer).delete()


def cvv_status(token_id: uuid.UUID, *, fresh: bool) -> str | None:
    """The token's CVV authorization status once the gateway has finished checking it.

    ``fresh``: the customer just gave a security code (the gateway checks it again), so
    the mirror is read again from the gateway even if it says ``current``. A check still
    running after :data:`CVV_WAIT` seconds answers ``pending``.
    """
    info = TransactionTokenInfo.objects.filter(token_id=token_id).first()
    deadline = time.monotonic() + CVV_WAIT
    while fresh or info is None or _pending(info):
        fresh = False
        info = services.refresh_saved_card(token_id)
        if not _pending(info) or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    return info.cvv_authorization_status if info.cvv_authorization_enabled else None


def await_new_card(token_id: str) -> None:
    """Before a new saved card's first charge: the gateway checks its security code (when the
    store asks) right after making the token; a charge before that would be refused."""
    try:
        token = uuid.UUID(token_id)
    except ValueError:
        return  # not a token: the charge's own checks say so
    cvv_status(token, fresh=False)


def _pending(info: TransactionTokenInfo) -> bool:
    return bool(info.cvv_authorization_enabled) and info.cvv_authorization_status == "pending"


@receiver(saved_card_replaced, sender=TransactionTokenInfo, dispatch_uid="shop-card-replaced")
def card_replaced(
    sender: Any, saved_card: TransactionTokenInfo, previous_token_id: str, **kwargs: Any
) -> None:
    """The gateway renewed the card (a new expiry): charge the new token from now on."""
    SavedCard.objects.filter(token_id=previous_token_id).update(token_id=saved_card.token_id)


@receiver(saved_card_deleted, sender=TransactionTokenInfo, dispatch_uid="shop-card-deleted")
def card_deleted(sender: Any, saved_card: TransactionTokenInfo, **kwargs: Any) -> None:
    """The card can no longer be charged: stop offering it."""
    SavedCard.objects.filter(token_id=saved_card.token_id).delete()
