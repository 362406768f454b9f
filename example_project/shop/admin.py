from __future__ import annotations

from django.contrib import admin

from .models import Order, Product


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["name", "price", "active"]


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["id", "product", "quantity", "amount", "currency", "status", "created_at"]
    list_filter = ["status"]
    list_select_related = ["product"]
    # The status follows the payment (signal handler): staff read it, the gateway sets it.
    readonly_fields = ["public_id", "amount", "currency", "status", "charge", "paid_at"]
