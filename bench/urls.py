"""URLs of the benchmark project: the app's views, the admin, and minimal webhook views."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from bench.minimal_webhook import floor_webhook, full_table_webhook

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycharge.urls")),
    # The contenders of the receipt cost (bench/webhook_receipt.py).
    path("floor-webhook/", floor_webhook),
    path("full-table-webhook/", full_table_webhook),
]
