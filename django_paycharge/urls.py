"""Mount with ``path("payments/", include("django_paycharge.urls"))``."""

from __future__ import annotations

from django.urls import path

from .views import payment, returns, webhooks

app_name = "paycharge"

urlpatterns = [
    path("webhook/", webhooks.webhook, name="webhook"),
    path("webhook/<str:account>/", webhooks.webhook, name="webhook"),
    path("return/", returns.charge_return, name="return"),
    path("return/3ds/", returns.three_ds_return, name="three_ds_return"),
    path("pay/<uuid:charge_id>/", payment.payment_page, name="pay"),
]
