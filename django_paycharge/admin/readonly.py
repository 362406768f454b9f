"""The base of every admin of the app: the mirror is read-only (the gateway decides)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

# Django's admin classes are generic only to type checkers (django-stubs);
# subscripting them at run time fails without django_stubs_ext.monkeypatch().
if TYPE_CHECKING:
    _ModelAdminBase = admin.ModelAdmin[Any]
else:
    _ModelAdminBase = admin.ModelAdmin


class ReadOnlyAdmin(_ModelAdminBase):
    """No add, change or delete: rows change only through the services."""

    class Media:
        css = {"all": ("django_paycharge/admin.css",)}
        js = ("django_paycharge/admin.js",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
