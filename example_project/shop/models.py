"""Products and orders. An order is paid by one or more charges (a declined card, then another)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _


class Product(models.Model):
    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    #: In the currency's minor unit (JPY has none: 1200 is ¥1,200).
    price = models.PositiveIntegerField(_("price"))
    active = models.BooleanField(_("on sale"), default=True)

    class Meta:
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Order(models.Model):
    class Status(models.TextChoices):
        NEW = "new", _("Waiting for payment")
        AWAITING = "awaiting", _("Waiting for your transfer or store payment")
        PAID = "paid", _("Paid")
        FAILED = "failed", _("Payment failed")

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

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.quantity} x {self.product}"

    @property
    def can_pay(self) -> bool:
        """A new order, or one whose last payment failed, can be paid (again)."""
        return self.status in (self.Status.NEW, self.Status.FAILED)
