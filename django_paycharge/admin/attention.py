"""Lists that the dashboard's "needs attention" items open: charge requests and syncs."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy

from ..models import ChargeRequest, SyncCheckpoint
from ..services.attention import sync_behind
from . import display
from .filters import AccountFilter, OutcomeFilter
from .readonly import ReadOnlyAdmin
from .refunds import _charge_link as charge_link


class ChargeRequestAdmin(ReadOnlyAdmin):
    """New charges as asked for: unknown ones wait for ``paycharge_recover``."""

    list_display = ("__str__", "state", "charge_column", "attempts", "sent_at", "created_at",
                    "account")  # fmt: skip
    list_filter = (
        "state",
        OutcomeFilter,
        AccountFilter,
        ("created_at", admin.DateFieldListFilter),
    )
    list_select_related = ("charge",)
    show_full_result_count = False
    ordering = ("-created_at", "-id")
    fields = ("caller_key", "idempotency_key", "state", "charge_column", "charge_gateway_id",
              "account", "params_pretty", "attempts", "sent_at", "error_pretty",
              "gateway_request_id", "created_at", "updated_at")  # fmt: skip
    readonly_fields = fields

    @admin.display(description=gettext_lazy("charge"))
    def charge_column(self, request: ChargeRequest) -> SafeString | str:
        return charge_link(request.charge) if request.charge is not None else "-"

    @admin.display(description=gettext_lazy("request parameters"))
    def params_pretty(self, request: ChargeRequest) -> SafeString:
        return display.pretty_json(request.params)

    @admin.display(description=gettext_lazy("error"))
    def error_pretty(self, request: ChargeRequest) -> SafeString:
        return display.pretty_json(request.error)


class BehindFilter(admin.SimpleListFilter):
    title = gettext_lazy("behind")
    parameter_name = "behind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", gettext_lazy("Behind or failed"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(sync_behind(timezone.now()))
        return queryset


class SyncCheckpointAdmin(ReadOnlyAdmin):
    """Where each account's syncs got to; behind ones are what the dashboard counts."""

    list_display = ("__str__", "last_completed_at", "high_water", "run_started_at",
                    "run_holder", "short_error")  # fmt: skip
    list_filter = (BehindFilter, "resource", "account")
    ordering = ("account", "store_key", "resource")
    fields = ("account", "store_key", "resource", "high_water", "last_completed_at",
              "run_started_at", "run_from", "run_full", "run_holder", "last_error",
              "updated_at")  # fmt: skip
    readonly_fields = fields

    @admin.display(description=gettext_lazy("last error"))
    def short_error(self, checkpoint: SyncCheckpoint) -> str:
        return checkpoint.last_error[:120] or "-"
