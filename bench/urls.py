"""URLs of the benchmark project: the app's views and the admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycharge.urls")),
]
