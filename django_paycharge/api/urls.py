"""DRF endpoints for storefronts and back offices.

Mount with ``path("api/payments/", include("django_paycharge.api.urls"))``; see docs/api.md.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from . import lifecycle_views, subscription_views, views

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
    path(
        "subscriptions/",
        subscription_views.SubscriptionListCreateView.as_view(),
        name="subscription-list",
    ),
    path(
        "subscriptions/<str:subscription_id>/",
        subscription_views.SubscriptionDetailView.as_view(),
        name="subscription-detail",
    ),
    path(
        "subscriptions/<str:subscription_id>/scheduled_payments/",
        subscription_views.ScheduledPaymentsView.as_view(),
        name="subscription-scheduled-payments",
    ),
    *(
        path(
            f"subscriptions/<str:subscription_id>/{name}/",
            view.as_view(),
            name=f"subscription-{name}",
        )
        for name, view in (
            ("suspend", subscription_views.SuspendView),
            ("resume", subscription_views.ResumeView),
            ("cancel", subscription_views.CancelView),
            ("card", subscription_views.CardView),
        )
    ),
    path("webhooks/", views.WebhookConfigurationListView.as_view(), name="webhook-list"),
    path(
        "webhooks/<str:webhook_id>/",
        views.WebhookConfigurationDetailView.as_view(),
        name="webhook-detail",
    ),
]
