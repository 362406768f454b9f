"""Products and orders. An order is paid by one or more charges (a declined card, then another).

A product with a ``period`` is sold as a subscription: its order (the sign-up) is paid by
the subscription's first payment, and each later payment becomes an order of its own
(``renewal_of`` the sign-up; ``shop/renewals.py``).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _


def metadata_number(value: Any) -> int | None:
    """An order's number as the shop wrote it into a charge's or subscription's metadata
    (a whole number, or its text as the gateway may send it back); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


class Product(models.Model):
    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    #: In the currency's minor unit (JPY has none: 1200 is ¥1,200).
    price = models.PositiveIntegerField(_("price"))
    active = models.BooleanField(_("on sale"), default=True)
    #: Sold as a subscription charged on this period (the gateway's ``period``); blank: once.
    period = models.CharField(
        _("subscription period"),
        max_length=16,
        blank=True,
        default="",
        choices=[("", _("One-off purchase")), ("monthly", _("Every month"))],
    )

    class Meta:
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_subscription(self) -> bool:
        return bool(self.period)


class Order(models.Model):
    class Status(models.TextChoices):
        NEW = "new", _("Waiting for payment")
        AWAITING = "awaiting", _("Waiting for your transfer or store payment")
        PAID = "paid", _("Paid")
        FAILED = "failed", _("Payment failed")

    class SubscriptionNote(models.TextChoices):
        """What the customer's subscription needs them to know (set by ``shop/renewals.py``)."""

        NONE = "", _("Nothing to report")
        RENEWAL_FAILED = "renewal_failed", _("The last renewal payment failed")
        SUSPENDED = "suspended", _("Suspended")
        CANCELED = "canceled", _("Canceled")
        COMPLETED = "completed", _("Completed")

    #: In URLs: customers never see sequential ids.
    public_id = models.UUIDField(_("public id"), default=uuid.uuid4, unique=True, editable=False)
    product = models.ForeignKey(Product, on_delete=models.PROTECT, verbose_name=_("product"))
    quantity = models.PositiveIntegerField(_("quantity"), default=1)
    #: Fixed when the order is placed: the charge's amount comes from here, never the browser.
    amount = models.PositiveIntegerField(_("amount"))
    currency = models.CharField(_("currency"), max_length=3)
    status = models.CharField(
        _("status"), max_length=16, choices=Status.choices, default=Status.NEW
    )
    #: The latest charge made for this order.
    charge = models.ForeignKey(
        "django_paycharge.Charge",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("charge"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    paid_at = models.DateTimeField(_("paid at"), null=True, blank=True)
    #: A subscription's sign-up order: the subscription its current attempt made.
    subscription = models.ForeignKey(
        "django_paycharge.Subscription",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("subscription"),
    )
    #: Numbers the sign-up's attempts: each has its own idempotency key (``shop/subscribe.py``).
    subscription_attempt = models.PositiveIntegerField(
        _("subscription attempt"), default=1, editable=False
    )
    subscription_note = models.CharField(
        _("subscription note"),
        max_length=16,
        blank=True,
        default="",
        choices=SubscriptionNote.choices,
    )
    #: A renewal's order: the sign-up order of its subscription (its ``charge`` is the renewal's).
    renewal_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="renewals",
        verbose_name=_("renewal of"),
    )

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        ordering = ["-created_at"]
        constraints = [
            # One order per renewal charge, however often the renewal is heard.
            models.UniqueConstraint(
                fields=["charge"],
                condition=models.Q(renewal_of__isnull=False),
                name="shop_order_one_per_renewal",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.quantity} x {self.product}"

    @property
    def can_pay(self) -> bool:
        """A new order, or one whose last payment failed, can be paid (again)."""
        return self.status in (self.Status.NEW, self.Status.FAILED)


class SavedCard(models.Model):
    """A customer's saved card: the gateway's ``recurring`` transaction token, never the card.

    The shop has no customer accounts: a customer is this browser (a random id in its
    session, ``shop/saved_cards.py``). What the page shows of the card (its brand, its last
    four digits, whether the store asks its security code) is in the app's mirror of the
    token (``TransactionTokenInfo``).
    """

    #: The browser's customer id (``shop/saved_cards.py``): one saved card each, the latest.
    customer = models.UUIDField(_("customer"), unique=True)
    token_id = models.UUIDField(_("transaction token"), unique=True)
    saved_at = models.DateTimeField(_("saved at"), auto_now=True)

    class Meta:
        verbose_name = _("saved card")
        verbose_name_plural = _("saved cards")

    def __str__(self) -> str:
        return str(self.token_id)
