"""Quarantined items: what the gateway sent that could not be stored, and how staff settle it.

An item without a usable id can never be stored from its own payload. Staff
settle it here: **Store from the gateway by id…** (a charge: the app reads it
from the gateway by the id they found, in the gateway's console, say) or
**Dismiss…** (with a reason, kept on the item). Both need ``call_gateway``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from ..exceptions import PayChargeError
from ..models import QuarantinedItem
from ..services.mirror import dismiss_quarantined, store_quarantined_by_id
from . import display
from .readonly import ReadOnlyAdmin

TEMPLATE = "admin/django_paycharge/quarantineditem/settle.html"


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


class DismissForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("Why dismiss them"),
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("Kept with each item, with your name and the time."),
    )


class StoreForm(forms.Form):
    charge_id = forms.UUIDField(
        label=gettext_lazy("The charge's id on the gateway"),
        help_text=gettext_lazy(
            "Found in the gateway's console, for instance: the charge is read from the "
            "gateway by this id and stored like any other."
        ),
    )


def _page(
    model_admin: Any,
    request: HttpRequest,
    items: QuerySet[QuarantinedItem],
    action: str,
    title: Any,
    form: forms.Form,
) -> TemplateResponse:
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "action": action,
        "items": items,
        "form": form,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, TEMPLATE, context)


@admin.action(description=gettext_lazy("Dismiss… (with a reason)"), permissions=["dismiss"])
def dismiss(
    model_admin: Any, request: HttpRequest, queryset: QuerySet[QuarantinedItem]
) -> HttpResponse | None:
    open_items = queryset.filter(resolved_at__isnull=True)
    form = DismissForm(request.POST if request.POST.get("post") == "yes" else None)
    if form.is_valid():
        count = dismiss_quarantined(
            open_items, form.cleaned_data["reason"], by=request.user.get_username()
        )
        model_admin.message_user(
            request,
            ngettext("%(count)d item dismissed.", "%(count)d items dismissed.", count)
            % {"count": count},
        )
        return None
    return _page(model_admin, request, open_items, "dismiss", _("Dismiss quarantined items"), form)


@admin.action(description=gettext_lazy("Store from the gateway by id…"), permissions=["dismiss"])
def store_from_gateway(
    model_admin: Any, request: HttpRequest, queryset: QuerySet[QuarantinedItem]
) -> HttpResponse | None:
    items = queryset.filter(resolved_at__isnull=True)
    if items.count() != 1:
        model_admin.message_user(
            request, _("Select one unresolved item: each has its own id."), messages.WARNING
        )
        return None
    item = items.get()
    form = StoreForm(request.POST if request.POST.get("post") == "yes" else None)
    if form.is_valid():
        try:
            charge = store_quarantined_by_id(
                item, form.cleaned_data["charge_id"], by=request.user.get_username()
            )
        except PayChargeError as exc:
            form.add_error("charge_id", str(exc))
        else:
            model_admin.message_user(
                request,
                _("Stored as charge %(id)s (%(status)s).")
                % {"id": charge.gateway_id, "status": charge.get_status_display()},
                messages.SUCCESS,
            )
            return None
    title = _("Store a quarantined item from the gateway")
    return _page(model_admin, request, items, "store_from_gateway", title, form)


class QuarantinedItemAdmin(ReadOnlyAdmin):
    list_display = (
        "last_seen_at",
        "account",
        "resource",
        "short_reason",
        "times_seen",
        "retriable",
        "resolution_display",
    )
    list_filter = (UnresolvedFilter, "resolution", "retriable", "resource", "account")
    search_fields = ("reason", "payload")
    search_help_text = gettext_lazy("Words of the reason or of the payload.")
    ordering = ("-last_seen_at", "-id")
    actions = (store_from_gateway, dismiss)
    fields = (
        "account",
        "resource",
        "source",
        "reason",
        "payload_pretty",
        "times_seen",
        "attempts",
        "retriable",
        "first_seen_at",
        "last_seen_at",
        "reported_at",
        "resolution",
        "resolution_note",
        "resolved_by",
        "resolved_at",
        "resolved_id",
    )
    readonly_fields = fields

    @admin.display(description=gettext_lazy("reason"))
    def short_reason(self, item: QuarantinedItem) -> str:
        return item.reason[:120]

    @admin.display(description=gettext_lazy("resolution"), ordering="resolved_at")
    def resolution_display(self, item: QuarantinedItem) -> str:
        if not item.resolved_at:
            return str(_("Waiting"))
        label = item.get_resolution_display() or _("Resolved")
        note = f": {item.resolution_note[:80]}" if item.resolution_note else ""
        return f"{label}{note}"

    @admin.display(description=gettext_lazy("payload as received"))
    def payload_pretty(self, item: QuarantinedItem) -> SafeString:
        return display.pretty_body(item.payload)

    def has_dismiss_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_paycharge.call_gateway")
