"""The shop's pages: products, an order, its checkout, and a demo bank for the fake gateway."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import requests
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from django_paycharge import services
from django_paycharge.client.subscription_vocabulary import CHANGE_TOKEN, refusal
from django_paycharge.exceptions import (
    ChargeStateError,
    IdempotencyKeyReusedError,
    InvalidParametersError,
    NotFoundError,
    OutcomeUnknownError,
    PayChargeError,
    PaymentDetailsRejectedError,
)
from django_paycharge.models import Charge
from django_paycharge.services.charges import INSTRUCTED_TYPES as INSTRUCTED

from .checkout import checkout_context, rejected_message
from .models import Order, Product
from .payments import failure_message, needs_three_ds, pay_order, payment_type
from .refunds import staff_refund_context
from .saved_cards import await_new_card
from .saved_cards import keep as keep_card
from .subscribe import subscribe_order

logger = logging.getLogger("shop.views")
SESSION_KEY = "shop_orders"


def _remember(request: HttpRequest, order: Order) -> None:
    orders = [o for o in request.session.get(SESSION_KEY, []) if o != str(order.public_id)]
    request.session[SESSION_KEY] = [*orders[-49:], str(order.public_id)]


def _customer_order(request: HttpRequest, public_id: uuid.UUID) -> Order:
    """The order, if this browser placed it (or staff look at it); else 404."""
    order = get_object_or_404(
        Order.objects.select_related("product", "charge", "subscription"), public_id=public_id
    )
    user: Any = request.user
    if str(public_id) not in request.session.get(SESSION_KEY, []) and not user.is_staff:
        raise Http404("No such order.")
    return order


@require_GET
def product_list(request: HttpRequest) -> HttpResponse:
    products = Product.objects.filter(active=True)
    context = {"products": products, "currency": settings.SHOP_CURRENCY}
    return render(request, "shop/products.html", context)


@require_POST
def place_order(request: HttpRequest) -> HttpResponse:
    product = get_object_or_404(Product, pk=request.POST.get("product"), active=True)
    try:
        quantity = int(request.POST.get("quantity", "1"))
    except ValueError:
        quantity = 0
    if not 1 <= quantity <= 10:
        messages.error(request, _("Please choose a quantity from 1 to 10."))
        return redirect("shop:products")
    order = Order.objects.create(
        product=product,
        quantity=quantity,
        amount=product.price * quantity,
        currency=settings.SHOP_CURRENCY,
    )
    _remember(request, order)
    return redirect("shop:checkout", public_id=order.public_id)


@never_cache
@require_GET
def checkout(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    order = _customer_order(request, public_id)
    if not order.can_pay:
        return redirect("shop:order", public_id=order.public_id)
    return render(request, "shop/checkout.html", checkout_context(request, order))


@require_POST
def pay(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """The browser created a transaction token: charge the order's amount with it."""
    order = _customer_order(request, public_id)
    if not order.can_pay:
        return redirect("shop:order", public_id=order.public_id)
    token_id = request.POST.get("transaction_token_id", "").strip()
    # The card the customer asked to keep: this very token (a ``recurring`` one, for a
    # one-off payment), or one the widget made beside a subscription's token.
    save = request.POST.get("saved_card_token_id", "").strip()

    def attempt() -> Charge | None:
        if order.product.is_subscription:
            # The first payment follows the subscription; its webhook marks the order paid.
            # A card asking for 3-D Secure goes through the app's payment page first
            # (settle sends it there); a konbini first payment waits on the order page.
            method = request.POST.get("payment_type", "").strip() or None
            first = subscribe_order(request, order, token_id, method)
            if save:
                keep_card(request, save)
            return first if first is not None and needs_three_ds(first) else None
        saved = bool(save) and save == token_id
        if saved:
            await_new_card(token_id)  # its security code checked first, when the store asks
        charge = pay_order(request, order, token_id, saved=saved)
        if saved and charge.status not in ("failed", "error"):
            keep_card(request, save)
        return charge

    return settle(request, order, attempt)


def settle(
    request: HttpRequest,
    order: Order,
    attempt: Callable[[], Charge | None],
    explain: Callable[[PayChargeError], HttpResponse | None] | None = None,
) -> HttpResponse:
    """Run the order's payment ``attempt`` and send the customer where its outcome says
    (None: a subscription's, the order page). ``explain`` may answer a refusal first."""
    try:
        charge = attempt()
    except PayChargeError as exc:
        answer = explain(exc) if explain is not None else None
        return answer if answer is not None else _refused(request, order, exc)
    if charge is None:
        return redirect("shop:order", public_id=order.public_id)
    if charge.status in ("pending", "awaiting") and payment_type(charge) == "online":
        # The app's payment page sends the customer on to the wallet provider.
        return redirect("paycharge:pay", charge_id=charge.gateway_id)
    if needs_three_ds(charge):
        # The same page sends the customer to the card issuer's 3-D Secure challenge.
        return redirect("paycharge:pay", charge_id=charge.gateway_id)
    return redirect("shop:order", public_id=order.public_id)


def _refused(request: HttpRequest, order: Order, exc: PayChargeError) -> HttpResponse:
    if isinstance(exc, IdempotencyKeyReusedError):
        # Another tab (or a second click with another card) is paying this order, or paid it.
        messages.info(request, _("This order is already being paid in another window."))
        return redirect("shop:order", public_id=order.public_id)
    if isinstance(exc, OutcomeUnknownError):
        error = _(
            "We could not confirm whether your payment went through. Please do not pay "
            "again: check this order again in a few minutes."
        )
        return _checkout_again(request, order, error)
    if isinstance(exc, InvalidParametersError):
        return _checkout_again(request, order, rejected_message(e.field for e in exc.errors))
    if isinstance(exc, NotFoundError | PaymentDetailsRejectedError):
        # The gateway knows no such transaction token, or refused it (expired, used,
        # card locked...): trying again in a moment would not help the customer.
        logger.info("Order %s: payment details refused (%s)", order.pk, exc.code)
        error = _(
            "The payment details were not accepted. Nothing was charged; please check them, "
            "or choose another way to pay."
        )
        return _checkout_again(request, order, error)
    logger.warning("Order %s: charge not created (%s)", order.pk, type(exc).__name__)
    error = _(
        "The payment service did not accept the payment right now. Nothing was charged; "
        "please try again in a moment."
    )
    return _checkout_again(request, order, error)


def _checkout_again(
    request: HttpRequest, order: Order, error: str, *, ask_cvv: bool = False
) -> HttpResponse:
    context = checkout_context(request, order)
    context["error"] = error
    context["ask_cvv"] = ask_cvv or context["ask_cvv"]
    return render(request, "shop/checkout.html", context, status=400)


@never_cache
@require_GET
def order_detail(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    order = _customer_order(request, public_id)
    charge = order.charge
    # The page names the method: a new charge's is read once (then stored).
    method = payment_type(charge) if charge is not None else ""
    context: dict[str, Any] = {
        "order": order,
        "charge": charge,
        "demo_bank": settings.SHOP_DEMO_BANK,
        "failure": failure_message(charge) if order.status == Order.Status.FAILED else "",
        "needs_three_ds": charge is not None and needs_three_ds(charge),
        **staff_refund_context(request, charge),
    }
    if charge is not None and charge.status == "awaiting" and method in INSTRUCTED:
        context["instructions"] = _instructions(charge)
    if order.subscription is not None:
        context["renewals"] = order.renewals.select_related("charge").order_by("created_at")
        context["demo_clock"] = settings.SHOP_DEMO_BANK and _is_staff(request)
        # The SDKs' rule: a card changes in unconfirmed, unpaid, current and suspended.
        context["can_change_card"] = order.renewal_of_id is None and (
            refusal(CHANGE_TOKEN, order.subscription.status) is None
        )
    return render(request, "shop/order.html", context)


def _is_staff(request: HttpRequest) -> bool:
    user: Any = request.user
    return bool(user.is_staff)


@require_POST
def demo_move_clock(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Staff, on the fake gateway only: move its subscriptions' clock a month ahead.

    The fake then charges what has come due and sends its ``subscription_*`` webhooks:
    each renewal reaches the shop as a real gateway's would, and becomes an order.
    """
    if not settings.SHOP_DEMO_BANK or not _is_staff(request):
        raise Http404("No demo clock here.")
    order = _customer_order(request, public_id)
    try:
        answer = requests.post(
            f"{settings.PAYCHARGE['BASE_URL']}/_fake/clock", json={"days": 31}, timeout=30
        )
        answer.raise_for_status()
        tried = int(answer.json()["payments_tried"])
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        logger.warning("The fake gateway's clock did not move: %s", type(exc).__name__)
        messages.error(request, _("The fake gateway's clock did not move. Is it running?"))
    else:
        messages.success(
            request,
            ngettext(
                "The fake gateway's clock moved a month ahead: %(count)s payment was "
                "charged. Its order arrives by webhook: reload this page.",
                "The fake gateway's clock moved a month ahead: %(count)s payments were "
                "charged. Their orders arrive by webhook: reload this page.",
                tried,
            )
            % {"count": tried},
        )
    return redirect("shop:order", public_id=order.public_id)


def _instructions(charge: Any) -> services.PaymentInstructions | None:
    """What the customer of a store payment or a transfer must do (the app's service)."""
    try:
        return services.payment_instructions(charge)
    except ChargeStateError:
        return None  # paid or expired meanwhile: the status on the page says which
    except PayChargeError as exc:
        logger.warning("Payment instructions of charge %s not read: %s", charge.gateway_id, exc)
        return None


@never_cache
@require_GET
def order_status(request: HttpRequest, public_id: uuid.UUID) -> JsonResponse:
    """The order's status from the shop's database (webhooks keep it current), for the poll."""
    order = _customer_order(request, public_id)
    return JsonResponse({"status": order.status})


@never_cache
@require_GET
def demo_bank(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """A stand-in for the customer's bank or convenience store (fake gateway only)."""
    if not settings.SHOP_DEMO_BANK:
        raise Http404("The demo bank is off.")
    order = _customer_order(request, public_id)
    if order.charge is None:
        raise Http404("Nothing to pay.")
    context = {
        "order": order,
        "charge": order.charge,
        "complete_url": (
            f"{settings.PAYCHARGE['BASE_URL']}/_fake/charges/{order.charge.gateway_id}/complete"
        ),
        "order_url": reverse("shop:order", args=[order.public_id]),
    }
    return render(request, "shop/demo_bank.html", context)
