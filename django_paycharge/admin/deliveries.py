"""The webhook delivery log: every delivery as stored, stuck ones told apart, Reprocess."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from ..client.vocabulary import TRIGGERS
from ..models import WebhookDelivery
from ..outbox import claimant, stuck
from ..services.webhooks import BUSY, MISSING, process_delivery
from . import display
from .gateway import limited
from .readonly import ReadOnlyAdmin


class EventFilter(admin.SimpleListFilter):
    title = gettext_lazy("event")
    parameter_name = "event"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        choices = [(event, event) for event in TRIGGERS]
        value = self.value()
        if value and value not in TRIGGERS:
            choices.append((value, value))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(event=value) if value else queryset


class DeliveryStatusFilter(admin.SimpleListFilter):
    """The statuses, and "stuck": claimed by a process whose lease ran out (it died)."""

    title = gettext_lazy("status")
    parameter_name = "status__exact"  # the URL parameter of the plain status filter it replaces
    STUCK = "stuck"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            *WebhookDelivery.Status.choices,
            (self.STUCK, _("Stuck (its worker died; taken over by the next run)")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == self.STUCK:
            return queryset.filter(stuck(timezone.now()))
        if value == WebhookDelivery.Status.PROCESSING:
            return queryset.filter(status=value).exclude(stuck(timezone.now()))
        return queryset.filter(status=value) if value else queryset


class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "received_at",
        "event",
        "status_badge",
        "delivery_id_column",
        "charge_column",
        "attempts",
        "account",
    )
    list_filter = (EventFilter, DeliveryStatusFilter, ("received_at", admin.DateFieldListFilter))
    list_select_related = ("charge",)
    show_full_result_count = False
    fields = (
        "event",
        "status_badge",
        "delivery_id",
        "account",
        "charge_link",
        "received_at",
        "processed_at",
        "attempts",
        "claimed_at",
        "lease_until",
        "claimed_by",
        "gateway_request_id",
        "last_error",
        "headers_pretty",
        "body_pretty",
    )
    readonly_fields = ("status_badge", "charge_link", "headers_pretty", "body_pretty")
    actions = ("reprocess",)

    def has_reprocess_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_paycharge.reprocess_webhookdelivery")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if request.method == "GET":
            stuck_count = WebhookDelivery.objects.filter(stuck(timezone.now())).count()
            if stuck_count:
                self.message_user(
                    request,
                    ngettext(
                        "%(count)d delivery is stuck: the process that claimed it died or "
                        "hangs. The next worker or paycharge_process_webhooks run takes it over.",
                        "%(count)d deliveries are stuck: the processes that claimed them died "
                        "or hang. The next worker or paycharge_process_webhooks run takes them "
                        "over.",
                        stuck_count,
                    )
                    % {"count": stuck_count},
                    messages.WARNING,
                )
        return super().changelist_view(request, extra_context)

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, delivery: WebhookDelivery) -> SafeString:
        if delivery.is_stuck():
            return display.status_badge("stuck", _("Stuck: its worker died"))
        if delivery.status == WebhookDelivery.Status.PROCESSING and delivery.lease_until:
            label = _("Processing (lease until %(time)s)") % {
                "time": date_format(timezone.localtime(delivery.lease_until), "TIME_FORMAT")
            }
            return display.status_badge(delivery.status, label)
        return display.status_badge(delivery.status, delivery.get_status_display())

    @admin.display(description=gettext_lazy("charge"))
    def charge_link(self, delivery: WebhookDelivery) -> SafeString | str:
        if delivery.charge is None:
            return "-"
        url = reverse("admin:django_paycharge_charge_change", args=[delivery.charge_id])
        return format_html('<a href="{}">{}</a>', url, delivery.charge.gateway_id)

    # The list shows ids short (the whole id in the title): full UUIDs wrapped over four lines.
    @admin.display(description=gettext_lazy("charge"))
    def charge_column(self, delivery: WebhookDelivery) -> SafeString | str:
        if delivery.charge is None:
            return "-"
        url = reverse("admin:django_paycharge_charge_change", args=[delivery.charge_id])
        return display.short_id(delivery.charge.gateway_id, url=url, charge=True)

    @admin.display(description=gettext_lazy("delivery id"), ordering="delivery_id")
    def delivery_id_column(self, delivery: WebhookDelivery) -> SafeString | str:
        return display.short_id(delivery.delivery_id)

    @admin.display(description=gettext_lazy("headers"))
    def headers_pretty(self, delivery: WebhookDelivery) -> SafeString:
        return display.pretty_json(delivery.headers)

    @admin.display(description=gettext_lazy("body"))
    def body_pretty(self, delivery: WebhookDelivery) -> SafeString:
        return display.pretty_body(delivery.body)

    @admin.action(description=gettext_lazy("Reprocess"), permissions=["reprocess"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        by = claimant(f"admin Reprocess by {request.user.get_username()}")
        for delivery in limited(self, request, queryset):
            was_stuck = delivery.is_stuck()
            status = process_delivery(delivery.pk, force=True, by=by)
            level, text = _reprocess_report(delivery, status, was_stuck)
            self.message_user(request, text, level)


def _reprocess_report(delivery: WebhookDelivery, status: str, was_stuck: bool) -> tuple[int, str]:
    """What the admin's Reprocess did to one delivery, as (message level, text)."""
    names = {"delivery": delivery}
    if status == BUSY:
        current = WebhookDelivery.objects.filter(pk=delivery.pk).first() or delivery
        return messages.WARNING, _(
            "Delivery %(delivery)s was not reprocessed: %(holder)s is processing it (lease until "
            "%(until)s). If that process died, the next worker or command run takes it over "
            "then."
        ) % {
            **names,
            "holder": current.claimed_by or _("another process"),
            "until": date_format(timezone.localtime(current.lease_until), "DATETIME_FORMAT")
            if current.lease_until
            else "?",
        }
    if status == MISSING:
        return messages.ERROR, _("Delivery %(delivery)s no longer exists.") % names
    if status == WebhookDelivery.Status.FAILED:
        last_error = (
            WebhookDelivery.objects.filter(pk=delivery.pk)
            .values_list("last_error", flat=True)
            .first()
        )
        text = _("Delivery %(delivery)s was reprocessed and failed: %(error)s") % {
            **names,
            "error": last_error or "?",
        }
        return messages.ERROR, text
    status_label = (
        WebhookDelivery.Status(status).label if status in WebhookDelivery.Status else status
    )
    if was_stuck:
        text = _(
            "Delivery %(delivery)s was stuck (its worker died); taken over and reprocessed: "
            "%(status)s."
        )
    else:
        text = _("Delivery %(delivery)s was reprocessed: %(status)s.")
    return messages.SUCCESS, text % {**names, "status": status_label}
