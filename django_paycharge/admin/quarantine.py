"""Quarantined items: what the gateway sent that could not be stored, with the reason."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy, ngettext

from ..models import QuarantinedItem
from . import display
from .readonly import ReadOnlyAdmin


class UnresolvedFilter(admin.SimpleListFilter):
    title = gettext_lazy("resolved")
    parameter_name = "resolved"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("no", gettext_lazy("No")), ("yes", gettext_lazy("Yes"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "no":
            return queryset.filter(resolved_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(resolved_at__isnull=False)
        return queryset


@admin.action(
    description=gettext_lazy("Dismiss (stop retrying and counting)"),
    permissions=["dismiss"],
)
def dismiss(model_admin: Any, request: HttpRequest, queryset: QuerySet[QuarantinedItem]) -> None:
    count = queryset.filter(resolved_at__isnull=True).update(resolved_at=timezone.now())
    model_admin.message_user(
        request,
        ngettext("%(count)d item dismissed.", "%(count)d items dismissed.", count)
        % {"count": count},
    )


class QuarantinedItemAdmin(ReadOnlyAdmin):
    list_display = (
        "last_seen_at",
        "account",
        "resource",
        "short_reason",
        "times_seen",
        "attempts",
        "resolved_at",
    )
    list_filter = (UnresolvedFilter, "resource", "account")
    search_fields = ("reason", "payload")
    ordering = ("-last_seen_at", "-id")
    actions = (dismiss,)
    fields = (
        "account",
        "resource",
        "source",
        "reason",
        "payload_pretty",
        "times_seen",
        "attempts",
        "first_seen_at",
        "last_seen_at",
        "resolved_at",
        "resolved_id",
    )
    readonly_fields = fields

    @admin.display(description=gettext_lazy("reason"))
    def short_reason(self, item: QuarantinedItem) -> str:
        return item.reason[:120]

    @admin.display(description=gettext_lazy("payload as received"))
    def payload_pretty(self, item: QuarantinedItem) -> SafeString:
        return display.pretty_body(item.payload)

    def has_dismiss_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_paycharge.call_gateway")
