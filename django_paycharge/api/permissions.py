"""Who may call what: staff by default, configurable through ``PAYCHARGE["API_*"]`` keys."""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from .. import conf

BANK_ACCOUNT_PERMISSION = "django_paycharge.view_bank_account_number"


def is_staff(user: Any) -> bool:
    """An active, authenticated staff user."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_active", False)
        and getattr(user, "is_staff", False)
    )


def may_see_account_number(user: Any) -> bool:
    """Full bank account numbers go only to staff holding the dedicated permission."""
    return is_staff(user) and bool(user.has_perm(BANK_ACCOUNT_PERMISSION))


class IsStaffUser(BasePermission):
    """Allows active staff users only."""

    message = _("Only staff may do this.")

    def has_permission(self, request: Request, view: APIView) -> bool:
        return is_staff(request.user)


def permissions_from_setting(key: str) -> list[BasePermission]:
    """Instances of the permission classes (dotted paths or classes) in ``PAYCHARGE[key]``."""
    entries = conf.get_setting(key)
    if isinstance(entries, str) or not isinstance(entries, list | tuple):
        entries = [entries]
    classes = [import_string(e) if isinstance(e, str) else e for e in entries]
    return [cls() for cls in classes]


def may_send_amount(request: Request, view: APIView) -> bool:
    """True when the caller may set a charge's amount and currency itself (staff by default)."""
    return all(
        p.has_permission(request, view)
        for p in permissions_from_setting("API_DIRECT_AMOUNT_PERMISSION_CLASSES")
    )
