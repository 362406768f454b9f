"""The bases of every admin of the app: the mirror is read-only (the gateway decides)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from . import rows

# Django's admin classes are generic only to type checkers (django-stubs);
# subscripting them at run time fails without django_stubs_ext.monkeypatch().
if TYPE_CHECKING:
    _ModelAdminBase = admin.ModelAdmin[Any]
else:
    _ModelAdminBase = admin.ModelAdmin


class ReadOnlyAdmin(_ModelAdminBase):
    """No add, change or delete: rows change only through the services.

    Every list draws 50 rows a page, each without a template or a translation lookup per
    cell (:mod:`.rows`): Django's 100 rows drawn its way took a list of deliveries or
    announcements past 100 ms of CPU (``bench/run admin``).
    """

    list_per_page = 50
    action_checkbox = rows.action_checkbox
    get_empty_value_display = rows.empty_value_display

    class Media:
        css = {"all": ("django_paycharge/admin.css",)}
        js = ("django_paycharge/admin.js",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline:
    """Mixed into an inline (before Django's class): shown, never added, changed or deleted.

    What the inline shows is part of the charge, so whoever may see the charge
    sees it; an inline whose rows need their own view permission names it in
    ``view_permission`` (None: Django's, the inline model's own).
    """

    extra = 0
    max_num: int | None = 0
    can_delete = False
    view_permission: str | None = "django_paycharge.view_charge"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if self.view_permission is None:
            return bool(super().has_view_permission(request, obj))  # type: ignore[misc]
        return bool(request.user.has_perm(self.view_permission))

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
