"""The customer's card pages: pay with the saved card in one step; change a subscription's card.

- :func:`pay_saved`: the checkout's "pay with the card ending 4242" button. When the store
  has the card's security code checked, the browser gave it to the gateway first
  (``saved_card.js``, with the widget's JWT): the shop waits for that check, then charges
  through ``services.charge_saved_card`` under the order's payment attempt key, as every
  checkout (a double click is one charge).
- :func:`change_card`: a subscription's sign-up order page links here; the widget makes a
  ``subscription`` token (as the sign-up does) and ``services.change_subscription_card``
  charges the next payments to it, exactly once per form (the form's own key). What the
  subscription's status does not allow (the SDKs' rules: an ended subscription) is said
  plainly.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from django_paycharge import conf, services
from django_paycharge.client.subscription_vocabulary import CHANGE_TOKEN, refusal
from django_paycharge.client.token_vocabulary import (
    CVV_AUTHORIZATION_NOT_COMPLETED,
    RECURRING_TOKEN_DISABLED,
    RECURRING_USAGE_REQUIRES_CVV,
)
from django_paycharge.exceptions import (
    IdempotencyKeyReusedError,
    InvalidParametersError,
    NotFoundError,
    OutcomeUnknownError,
    PayChargeError,
    PaymentDetailsRejectedError,
    SubscriptionStateError,
)
from django_paycharge.models import Subscription

from .checkout import script_texts
from .models import Order
from .payments import pay_order
from .saved_cards import cvv_status, forget, offer
from .views import _checkout_again, _customer_order, _refused, settle

logger = logging.getLogger("shop.cards")


@require_POST
def pay_saved(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Pay the order with the customer's saved card, in one step."""
    order = _customer_order(request, public_id)
    if not order.can_pay or order.product.is_subscription:
        return redirect("shop:order", public_id=order.public_id)
    card = offer(request)
    if card is None:
        error = _("Your saved card can no longer be used. Please enter a card.")
        return _checkout_again(request, order, error)
    cvv_given = request.POST.get("cvv_given") == "1"
    if card.asks_cvv or cvv_given:
        try:
            status = cvv_status(card.token_id, fresh=cvv_given)
        except PayChargeError as exc:
            return _refused(request, order, exc)
        if status == "pending":
            error = _(
                "We are still checking your card's security code. Nothing was charged; "
                "please press the button again in a moment."
            )
            return _checkout_again(request, order, error, ask_cvv=True)
        if status not in (None, "current"):
            error = _(
                "Your card's security code was not accepted. Nothing was charged; please "
                "check it, or pay with another card."
            )
            return _checkout_again(request, order, error, ask_cvv=True)

    def explain(exc: PayChargeError) -> HttpResponse | None:
        """The refusals of a saved card (the app's, or the gateway's), in the customer's words."""
        if exc.code in (RECURRING_USAGE_REQUIRES_CVV, CVV_AUTHORIZATION_NOT_COMPLETED):
            error = _("Please enter your card's security code to pay with it.")
            return _checkout_again(request, order, error, ask_cvv=True)
        if exc.code == RECURRING_TOKEN_DISABLED:
            forget(request)
            error = _("Your saved card can no longer be used. Please enter a card.")
            return _checkout_again(request, order, error)
        if exc.code == "CHARGE_TOO_QUICK":
            error = _(
                "Your saved card cannot be charged again so soon. Nothing was charged; "
                "please enter a card."
            )
            return _checkout_again(request, order, error)
        return None

    token = str(card.token_id)
    return settle(request, order, lambda: pay_order(request, order, token, saved=True), explain)


def _signup_order(request: HttpRequest, public_id: uuid.UUID) -> Order:
    order = _customer_order(request, public_id)
    if order.subscription is None or order.renewal_of_id is not None:
        raise Http404("No subscription on this order.")
    return order


def refusal_message(subscription: Subscription) -> str:
    """Why the card of ``subscription`` cannot be changed, in the customer's words."""
    if subscription.status in ("canceled", "completed"):
        return _("Your subscription has ended: there is no card to change.")
    status = subscription.get_status_display() or subscription.status
    return _("The card of your subscription cannot be changed while it is %(status)s.") % {
        "status": status
    }


@never_cache
@require_http_methods(["GET", "POST"])
def change_card(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """The page that charges a subscription's next payments to another card."""
    order = _signup_order(request, public_id)
    subscription = order.subscription
    assert subscription is not None
    if request.method == "GET":
        refused = refusal(CHANGE_TOKEN, subscription.status) is not None
        return _card_page(request, order, refusal_message(subscription) if refused else "")
    try:
        key = uuid.UUID(request.POST.get("key", ""))
    except ValueError:
        return redirect("shop:change_card", public_id=order.public_id)
    token_id = request.POST.get("transaction_token_id", "").strip()
    try:
        services.change_subscription_card(
            subscription,
            transaction_token_id=token_id,
            idempotency_key=f"shop-order-{order.pk}-card-{key}",
            requested_by=f"shop order {order.pk}",
        )
    except SubscriptionStateError:
        subscription.refresh_from_db()  # the service read it from the gateway just now
        return _card_page(request, order, refusal_message(subscription), status=409)
    except IdempotencyKeyReusedError:
        messages.info(request, _("This card change is already being made in another window."))
        return redirect("shop:order", public_id=order.public_id)
    except OutcomeUnknownError:
        error = _(
            "We could not confirm whether your card was changed. Please check this page "
            "again in a few minutes."
        )
        return _card_page(request, order, "", error=error, status=400)
    except (InvalidParametersError, NotFoundError, PaymentDetailsRejectedError) as exc:
        logger.info("Order %s: new card refused (%s)", order.pk, exc.code)
        error = _("The card was not accepted. Nothing was changed; please check it.")
        return _card_page(request, order, "", error=error, status=400)
    except PayChargeError as exc:
        logger.warning("Order %s: card not changed (%s)", order.pk, type(exc).__name__)
        error = _(
            "The payment service did not accept the change right now. Nothing was changed; "
            "please try again in a moment."
        )
        return _card_page(request, order, "", error=error, status=400)
    messages.success(
        request, _("Your subscription's card was changed: the next payments are charged to it.")
    )
    return redirect("shop:order", public_id=order.public_id)


def _card_page(
    request: HttpRequest, order: Order, refused: str, *, error: str = "", status: int = 200
) -> HttpResponse:
    context = {
        "order": order,
        "refused": refused,
        "error": error,
        "key": uuid.uuid4(),
        "gateway_url": settings.PAYCHARGE["BASE_URL"],
        "widget_jwt": conf.widget_jwt(),
        "texts": script_texts(),
    }
    return render(request, "shop/change_card.html", context, status=status)
