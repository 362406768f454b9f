"""The subscription admin: a read-only mirror, with suspend, resume and cancel behind their
own permissions (:mod:`.subscription_actions`)."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext, gettext_lazy

from ..models import Subscription
from . import subscription_fields
from .filters import (
    AccountFilter,
    SubscriptionCurrencyFilter,
    SubscriptionModeFilter,
    SubscriptionPeriodFilter,
)
from .paginator import EstimatedCountPaginator
from .readonly import ReadOnlyAdmin
from .search import id_prefix_range
from .subscription_actions import (
    cancel_subscriptions,
    resume_subscriptions,
    suspend_subscriptions,
)

#: The Django permission (``django_paycharge.<codename>``) of each staff change.
PERMISSIONS = {
    "suspend": "suspend_subscription",
    "resume": "resume_subscription",
    "cancel": "cancel_subscription",
}


class SubscriptionAdmin(ReadOnlyAdmin):
    list_display = (
        "short_id",
        "status_badge",
        "amount_text",
        "period_text",
        "next_payment_date",
        "payments_left",
        "amount_left_text",
        "created_on",
    )
    list_display_links = ("short_id",)
    list_filter = (
        "status",
        SubscriptionModeFilter,
        SubscriptionCurrencyFilter,
        AccountFilter,
        SubscriptionPeriodFilter,
    )
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    search_fields = ("=gateway_id",)  # for the box: get_search_results matches
    search_help_text = gettext_lazy(
        "A subscription id or its first 8 or more characters (as in the list), or an "
        "exact transaction token id."
    )
    ordering = ("-created_on", "-id")
    actions = (suspend_subscriptions, resume_subscriptions, cancel_subscriptions)
    inlines = (subscription_fields.ScheduledPaymentInline,)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "gateway_id",
                    "status",
                    "amount_text",
                    "period_text",
                    "next_payment_date",
                    "payments_left",
                    "amount_left_text",
                    "initial_amount_text",
                    "mode",
                    "account",
                    "store_id",
                    "transaction_token_id",
                    "created_on",
                    "updated_on",
                    "synced_at",
                )
            },
        ),
        (gettext_lazy("Charges"), {"fields": ("charges_list",)}),
        (gettext_lazy("Metadata"), {"fields": ("metadata_pretty",)}),
    )
    readonly_fields = (
        *fieldsets[0][1]["fields"],
        "charges_list",
        "metadata_pretty",
    )

    short_id = staticmethod(subscription_fields.short_id)
    status_badge = staticmethod(subscription_fields.status_badge)
    amount_text = staticmethod(subscription_fields.amount_text)
    amount_left_text = staticmethod(subscription_fields.amount_left_text)
    initial_amount_text = staticmethod(subscription_fields.initial_amount_text)
    period_text = staticmethod(subscription_fields.period_text)
    charges_list = staticmethod(subscription_fields.charges_list)
    metadata_pretty = staticmethod(subscription_fields.metadata_pretty)

    def has_suspend_permission(self, request: HttpRequest) -> bool:
        return _may(request, "suspend")

    def has_resume_permission(self, request: HttpRequest) -> bool:
        return _may(request, "resume")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return _may(request, "cancel")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Subscription], search_term: str
    ) -> tuple[QuerySet[Subscription], bool]:
        # Each match on an indexed column, as the charges': never a LIKE over the table.
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            value = uuid.UUID(term)
        except ValueError:
            prefix = id_prefix_range(term)
            if prefix is None:
                hint = gettext("Give a subscription id, or its first 8 characters or more.")
                self.message_user(request, hint, messages.INFO)
                return queryset.none(), False
            return queryset.filter(gateway_id__range=prefix), False
        return queryset.filter(Q(gateway_id=value) | Q(transaction_token_id=value)), False


def _may(request: HttpRequest, change: str) -> bool:
    return bool(request.user.has_perm(f"django_paycharge.{PERMISSIONS[change]}"))
