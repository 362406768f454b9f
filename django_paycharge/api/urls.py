"""DRF endpoints for storefronts and back offices.

Mount with ``path("api/payments/", include("django_paycharge.api.urls"))``; see docs/api.md.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from . import lifecycle_views, views

app_name = "paycharge-api"

urlpatterns: list[URLPattern | URLResolver] = [
    path("charges/", views.ChargeListCreateView.as_view(), name="charge-list"),
    path("charges/<str:charge_id>/", views.ChargeDetailView.as_view(), name="charge-detail"),
    path(
        "charges/<str:charge_id>/issuer_token/",
        views.ChargeIssuerTokenView.as_view(),
        name="charge-issuer-token",
    ),
    path(
        "charges/<str:charge_id>/capture/",
        lifecycle_views.ChargeCaptureView.as_view(),
        name="charge-capture",
    ),
    path(
        "charges/<str:charge_id>/refunds/",
        lifecycle_views.ChargeRefundsView.as_view(),
        name="charge-refunds",
    ),
    path(
        "charges/<str:charge_id>/cancels/",
        lifecycle_views.ChargeCancelsView.as_view(),
        name="charge-cancels",
    ),
    path("webhooks/", views.WebhookConfigurationListView.as_view(), name="webhook-list"),
    path(
        "webhooks/<str:webhook_id>/",
        views.WebhookConfigurationDetailView.as_view(),
        name="webhook-detail",
    ),
]
