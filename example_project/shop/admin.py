from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin

from .models import Order, Product

if TYPE_CHECKING:  # generic only for the type checker (no django-stubs-ext at run time)
    ProductAdminBase = admin.ModelAdmin[Product]
    OrderAdminBase = admin.ModelAdmin[Order]
else:
    ProductAdminBase = OrderAdminBase = admin.ModelAdmin


@admin.register(Product)
class ProductAdmin(ProductAdminBase):
    list_display = ["name", "price", "period", "active"]


@admin.register(Order)
class OrderAdmin(OrderAdminBase):
    list_display = [
        "id",
        "product",
        "quantity",
        "amount",
        "currency",
        "status",
        "renewal_of",
        "subscription_note",
        "created_at",
    ]
    list_filter = ["status", "subscription_note"]
    list_select_related = ["product", "renewal_of"]
    # The status follows the payment (signal handlers): staff read it, the gateway sets it.
    # A renewal's order is made by shop/renewals.py, one per renewal charge.
    readonly_fields = [
        "public_id",
        "amount",
        "currency",
        "status",
        "charge",
        "paid_at",
        "subscription",
        "subscription_note",
        "renewal_of",
    ]
