"""URLs of the benchmark project: the app's views, the admin, and a minimal webhook view."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from bench.minimal_webhook import minimal_webhook

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycharge.urls")),
    # The floor of the receipt-cost comparison (bench/webhooks.py).
    path("minimal-webhook/", minimal_webhook),
]
