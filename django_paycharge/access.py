"""Who may see a charge's payment page: the customer whose session created it, or staff.

Replace the rule with ``PAYCHARGE["CHARGE_ACCESS_HOOK"] = "myshop.payments.can_see"``,
a callable ``(request, charge) -> bool``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.module_loading import import_string

from . import conf
from .models import Charge

SESSION_KEY = "paycharge_charges"
_MAX_REMEMBERED = 50


def grant_charge_access(request: HttpRequest, charge: Charge) -> None:
    """Let the current session see ``charge``'s payment page (call it after creating the charge)."""
    remembered = [c for c in request.session.get(SESSION_KEY, []) if c != str(charge.gateway_id)]
    remembered.append(str(charge.gateway_id))
    request.session[SESSION_KEY] = remembered[-_MAX_REMEMBERED:]


def session_owns_charge(request: HttpRequest, charge: Charge) -> bool:
    """The default rule: staff, or a session that :func:`grant_charge_access` was called on."""
    user: Any = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    session = getattr(request, "session", None)
    return session is not None and str(charge.gateway_id) in session.get(SESSION_KEY, [])


def can_access_charge(request: HttpRequest, charge: Charge) -> bool:
    """Whether ``request``'s user or session may see ``charge`` (``CHARGE_ACCESS_HOOK``)."""
    hook = conf.get_setting("CHARGE_ACCESS_HOOK")
    func = import_string(hook) if isinstance(hook, str) else hook
    return bool(func(request, charge))
