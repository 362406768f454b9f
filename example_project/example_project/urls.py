"""The shop's URLs, the payment app's (webhook, return, payment page), the admin, the metrics."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from shop.ops import protected_metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycharge.urls")),
    path("ops/metrics", protected_metrics),
    path("", include("shop.urls")),
]
