"""The Django admin of the mirror: read-only pages, gateway actions behind their own permissions.

Registered on ``django.contrib.admin.site`` when the app is installed. See
``docs/admin.md``.
"""

from __future__ import annotations

from django.contrib import admin

from ..models import Charge, QuarantinedItem, WebhookConfiguration, WebhookDelivery
from .charges import ChargeAdmin
from .deliveries import WebhookDeliveryAdmin
from .paginator import EstimatedCountPaginator
from .quarantine import QuarantinedItemAdmin
from .webhooks import WebhookConfigurationAdmin

admin.site.register(Charge, ChargeAdmin)
admin.site.register(WebhookConfiguration, WebhookConfigurationAdmin)
admin.site.register(WebhookDelivery, WebhookDeliveryAdmin)
admin.site.register(QuarantinedItem, QuarantinedItemAdmin)

__all__ = [
    "ChargeAdmin",
    "EstimatedCountPaginator",
    "QuarantinedItemAdmin",
    "WebhookConfigurationAdmin",
    "WebhookDeliveryAdmin",
]
