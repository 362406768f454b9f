"""Exception reporter filters that also hide the app token's JWT.

Django's default filter hides settings whose names contain SECRET, TOKEN,
KEY, ... but not ``JWT``, so ``PAYCHARGE["JWT"]`` would show on the DEBUG
error page and in error e-mails. Use ours::

    DEFAULT_EXCEPTION_REPORTER_FILTER = "django_paycharge.debug.PayChargeExceptionReporterFilter"

or, when the shop already has a filter of its own (or an error-tracking SDK's),
mix :class:`HideJWTMixin` into it::

    class ShopFilter(HideJWTMixin, ErrorTrackerExceptionReporterFilter):
        pass

(system check ``django_paycharge.W002`` reminds you.)
"""

from __future__ import annotations

import re
from typing import Any

from django.views.debug import SafeExceptionReporterFilter

_JWT = re.compile("JWT", flags=re.IGNORECASE)


class HideJWTMixin:
    """Hides every setting whose name contains ``JWT``, on top of what the filter it is
    mixed into hides (put it first among the bases)."""

    cleansed_substitute: Any

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        if isinstance(key, str) and _JWT.search(key):
            return self.cleansed_substitute
        return super().cleanse_setting(key, value)  # type: ignore[misc]


class PayChargeExceptionReporterFilter(HideJWTMixin, SafeExceptionReporterFilter):
    """Django's filter, also hiding every setting whose name contains ``JWT``."""


def hides_jwt(filter_class: type[SafeExceptionReporterFilter]) -> bool:
    """Whether an exception reporter filter class hides a setting named ``JWT``."""
    probe = "probe-value-of-a-jwt"
    try:
        return bool(filter_class().cleanse_setting("JWT", probe) != probe)
    except Exception:  # a filter that needs arguments: judge by its pattern
        pattern = getattr(filter_class, "hidden_settings", None)
        return bool(pattern is not None and pattern.search("JWT"))
