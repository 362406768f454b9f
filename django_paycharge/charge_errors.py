"""What the gateway's charge error codes mean, in the reader's language: the one table.

A failed charge carries ``error = {"code": 306, "message": "...", "detail": ...}``.
The code's meaning is looked up here, and nowhere else, for the admin (staff
read "306: card declined") and for customers ("Your payment did not go
through: card declined."). The gateway's own ``message`` is its English text:
it is never put inside a sentence in another language; staff still see it in
the error object itself. ``PAYCHARGE["ADMIN_ERROR_CODES"]`` adds meanings (or
overrides ours) for both.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from . import conf

#: The codes the gateway's documentation names, with what they mean. Each meaning reads
#: alone (staff: "358: ...") and inside the customer's sentence ("did not go through: ...").
#: 356 and 358 are the 3-D Secure codes the gateway's SDKs name (their error tables map them
#: to "card not enrolled in 3-D Secure" and "3-D Secure could not be completed").
ERROR_CODES: dict[int, Any] = {
    306: _("card declined"),
    330: _("insufficient funds"),
    356: _("the card is not registered for its issuer's identity check (3-D Secure)"),
    358: _("the card issuer's identity check (3-D Secure) could not be completed"),
}


def error_code_meaning(code: Any) -> Any:
    """The meaning of a charge error code (the shop's setting first), or None when unknown."""
    if isinstance(code, bool):
        return None
    try:
        number = int(code)
    except (TypeError, ValueError):
        return None
    extra = conf.get_setting("ADMIN_ERROR_CODES") or {}
    meaning = extra.get(number, extra.get(str(number)))
    return meaning if meaning is not None else ERROR_CODES.get(number)


def error_code(error: Any) -> Any:
    """The ``code`` of a charge's (or refund's) error object, or None."""
    return error.get("code") if isinstance(error, dict) else None


def failure_message(status: str | None, error: Any) -> str:
    """What a customer reads about a charge that took no money (``failed``, ``error``,
    ``canceled``); "" for any other status."""
    if status == "canceled":
        return gettext("The payment was canceled or has expired. No money was taken.")
    if status not in ("failed", "error"):
        return ""
    meaning = error_code_meaning(error_code(error))
    if meaning:
        return gettext("Your payment did not go through: %(reason)s. No money was taken.") % {
            "reason": meaning
        }
    return gettext("Your payment did not go through. No money was taken.")
