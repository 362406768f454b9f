"""The Django admin of the mirror: read-only pages, gateway actions behind their own permissions.

Registered on ``django.contrib.admin.site`` when the app is installed. See
``docs/admin.md``.
"""

from __future__ import annotations

from django.contrib import admin

from ..models import (
    Announcement,
    Cancel,
    Charge,
    ChargeActionRequest,
    ChargeRequest,
    Dashboard,
    OwnerProblem,
    QuarantinedItem,
    Refund,
    Subscription,
    SyncCheckpoint,
    WebhookConfiguration,
    WebhookDelivery,
)
from .announcements import AnnouncementAdmin
from .attention import ChargeRequestAdmin, SyncCheckpointAdmin
from .charges import ChargeAdmin
from .dashboard import DashboardAdmin
from .deliveries import WebhookDeliveryAdmin
from .paginator import EstimatedCountPaginator
from .problems import OwnerProblemAdmin
from .quarantine import QuarantinedItemAdmin
from .refunds import CancelAdmin, ChargeActionRequestAdmin, RefundAdmin
from .subscriptions import SubscriptionAdmin
from .webhooks import WebhookConfigurationAdmin

admin.site.register(Charge, ChargeAdmin)
admin.site.register(WebhookConfiguration, WebhookConfigurationAdmin)
admin.site.register(WebhookDelivery, WebhookDeliveryAdmin)
admin.site.register(Refund, RefundAdmin)
admin.site.register(Cancel, CancelAdmin)
admin.site.register(ChargeActionRequest, ChargeActionRequestAdmin)
admin.site.register(QuarantinedItem, QuarantinedItemAdmin)
admin.site.register(ChargeRequest, ChargeRequestAdmin)
admin.site.register(SyncCheckpoint, SyncCheckpointAdmin)
admin.site.register(Dashboard, DashboardAdmin)
admin.site.register(Announcement, AnnouncementAdmin)
admin.site.register(OwnerProblem, OwnerProblemAdmin)
admin.site.register(Subscription, SubscriptionAdmin)

__all__ = [
    "AnnouncementAdmin",
    "CancelAdmin",
    "ChargeActionRequestAdmin",
    "ChargeAdmin",
    "ChargeRequestAdmin",
    "DashboardAdmin",
    "EstimatedCountPaginator",
    "QuarantinedItemAdmin",
    "RefundAdmin",
    "SubscriptionAdmin",
    "SyncCheckpointAdmin",
    "WebhookConfigurationAdmin",
    "WebhookDeliveryAdmin",
]
