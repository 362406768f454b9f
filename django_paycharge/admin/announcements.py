"""Announcements: which receiver heard which change, and those not heard (Retry, Dismiss)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from ..models import Announcement
from ..outbox import claimant, count_not_heard, dismiss_announcements, hear
from . import display
from .filters import SignalFilter
from .gateway import limited
from .readonly import ReadOnlyAdmin

Status = Announcement.Status


class AnnouncementAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "signal",
        "receiver",
        "status_badge",
        "attempts",
        "event_id_column",
        "error_column",
    )
    list_filter = ("status", SignalFilter, ("created_at", admin.DateFieldListFilter))
    search_fields = ("=event_id", "receiver")  # for the box: get_search_results matches
    search_help_text = gettext_lazy("An event id, or words of the receiver's name.")
    show_full_result_count = False
    fields = (
        "signal",
        "receiver",
        "status_badge",
        "event_id",
        "sender",
        "arguments_pretty",
        "created_at",
        "attempts",
        "claimed_at",
        "lease_until",
        "claimed_by",
        "processed_at",
        "last_error",
    )
    readonly_fields = ("status_badge", "arguments_pretty")
    actions = ("retry", "dismiss")

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_paycharge.retry_announcement")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if request.method == "GET":
            count = count_not_heard()
            if count:
                self.message_user(
                    request,
                    ngettext(
                        "%(count)d announcement was not heard by a receiver after every "
                        "attempt. Fix the receiver, then Retry it (or Dismiss it).",
                        "%(count)d announcements were not heard by a receiver after every "
                        "attempt. Fix the receivers, then Retry them (or Dismiss them).",
                        count,
                    )
                    % {"count": count},
                    messages.ERROR,
                )
        return super().changelist_view(request, extra_context)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Announcement], search_term: str
    ) -> tuple[QuerySet[Announcement], bool]:
        # An event id is looked up in its index (Django's "=event_id" compared its text with
        # LIKE on SQLite: every row read); other words are looked for in the receivers' names.
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            return queryset.filter(event_id=uuid.UUID(term)), False
        except ValueError:
            return queryset.filter(receiver__icontains=term), False

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, row: Announcement) -> SafeString:
        if row.status != Status.PROCESSING or row.lease_until is None:
            badge = "stuck" if row.status == Status.FAILED else row.status
            return display.status_badge(badge, row.get_status_display())
        when = date_format(timezone.localtime(row.lease_until), "DATETIME_FORMAT")
        if row.retrying:
            return display.status_badge(
                "retrying", _("Failed; runs again at %(time)s") % {"time": when}
            )
        if row.lease_until <= timezone.now():
            return display.status_badge("stuck", _("Its process died; the next sweep runs it"))
        return display.status_badge(
            row.status, _("Running (lease until %(time)s)") % {"time": when}
        )

    @admin.display(description=gettext_lazy("event id"), ordering="event_id")
    def event_id_column(self, row: Announcement) -> SafeString | str:
        return display.short_id(row.event_id)

    @admin.display(description=gettext_lazy("last error"))
    def error_column(self, row: Announcement) -> str:
        return row.last_error[:120]

    @admin.display(description=gettext_lazy("arguments"))
    def arguments_pretty(self, row: Announcement) -> SafeString:
        return display.pretty_json(row.arguments)

    @admin.action(description=gettext_lazy("Retry (run the receiver now)"), permissions=["retry"])
    def retry(self, request: HttpRequest, queryset: QuerySet[Announcement]) -> None:
        by = claimant(f"admin Retry by {request.user.get_username()}")
        for row in limited(self, request, queryset):
            status = hear(row.pk, by=by, force=row.status != Status.PROCESSING)
            names = {"row": row}
            if status == Status.PROCESSED:
                self.message_user(request, _("%(row)s was heard.") % names, messages.SUCCESS)
            elif status == "busy" and row.retrying and row.lease_until:
                text = _("%(row)s failed and runs again at %(time)s; it was left alone.")
                when = date_format(timezone.localtime(row.lease_until), "DATETIME_FORMAT")
                self.message_user(request, text % {**names, "time": when}, messages.WARNING)
            elif status == "busy":
                text = _("%(row)s is running in another process; it was left alone.")
                self.message_user(request, text % names, messages.WARNING)
            else:
                error = Announcement.objects.filter(pk=row.pk).values_list("last_error", flat=True)
                text = _("%(row)s failed again: %(error)s") % {**names, "error": error.first()}
                self.message_user(request, text, messages.ERROR)

    @admin.action(description=gettext_lazy("Dismiss (never run it again)"), permissions=["retry"])
    def dismiss(self, request: HttpRequest, queryset: QuerySet[Announcement]) -> None:
        pks = list(queryset.values_list("pk", flat=True))
        done = dismiss_announcements(pks, by=f"admin Dismiss by {request.user.get_username()}")
        self.message_user(
            request,
            ngettext(
                "%(count)d announcement not heard was dismissed.",
                "%(count)d announcements not heard were dismissed.",
                done,
            )
            % {"count": done},
            messages.SUCCESS,
        )
