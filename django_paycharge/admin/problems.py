"""Failures the owner must fix: their list, and the banner the admin's main pages show."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..models import OwnerProblem
from ..services.problems import current, current_problems
from .readonly import ReadOnlyAdmin

#: What to look at, for each kind, in the reader's language.
_HINTS = {
    OwnerProblem.Kind.CREDENTIALS: gettext_lazy(
        "The gateway refused the app token: check PAYCHARGE['SECRET'] and PAYCHARGE['JWT']."
    ),
    OwnerProblem.Kind.PERMISSIONS: gettext_lazy(
        "The app token may not do this: check its type and the store it reaches."
    ),
    OwnerProblem.Kind.STORE: gettext_lazy(
        "The gateway has no such store: check PAYCHARGE['STORE_ID'] and the app token."
    ),
    OwnerProblem.Kind.SETTINGS: gettext_lazy("A PAYCHARGE setting is missing or malformed."),
    OwnerProblem.Kind.UNREACHABLE: gettext_lazy(
        "The gateway could not be reached: check PAYCHARGE['BASE_URL'] and the network."
    ),
}


def show_banner(request: HttpRequest) -> None:
    """One error message per current problem, on a GET of the pages staff open first."""
    if request.method != "GET":
        return
    for problem in current_problems():
        text = _(
            "Payments of account %(account)s are failing (%(count)d times, last at "
            "%(when)s): %(hint)s Customers are told that payments are unavailable and that "
            "they were not charged."
        ) % {
            "account": problem.account,
            "count": problem.count,
            "when": timezone.localtime(problem.last_seen_at).strftime("%Y-%m-%d %H:%M"),
            "hint": _HINTS.get(OwnerProblem.Kind(problem.kind), ""),
        }
        messages.error(request, text)


class CurrentFilter(admin.SimpleListFilter):
    title = gettext_lazy("current")
    parameter_name = "current"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", gettext_lazy("Met in the last hour, under the settings in force"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(current())
        return queryset


class OwnerProblemAdmin(ReadOnlyAdmin):
    """What failed on the shop's own settings; fixed ones may be deleted."""

    list_display = ("account", "kind", "http_status", "code", "count", "last_seen_at",
                    "first_seen_at")  # fmt: skip
    list_filter = (CurrentFilter, "kind", "account")
    ordering = ("-last_seen_at",)
    fields = ("account", "kind", "http_status", "code", "detail", "count", "first_seen_at",
              "last_seen_at")  # fmt: skip
    readonly_fields = fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("django_paycharge.delete_ownerproblem"))

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        show_banner(request)
        return super().changelist_view(request, extra_context)
