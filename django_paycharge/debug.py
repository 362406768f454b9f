"""An exception reporter filter that also hides the app token's JWT.

Django's default filter hides settings whose names contain SECRET, TOKEN,
KEY, ... but not ``JWT``, so ``PAYCHARGE["JWT"]`` would show on the DEBUG
error page and in error e-mails. Use this one::

    DEFAULT_EXCEPTION_REPORTER_FILTER = "django_paycharge.debug.PayChargeExceptionReporterFilter"

(system check ``django_paycharge.W002`` reminds you.)
"""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class PayChargeExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's filter, also hiding every setting whose name contains ``JWT``."""

    hidden_settings = re.compile(
        SafeExceptionReporterFilter.hidden_settings.pattern + "|JWT", flags=re.IGNORECASE
    )


def hides_jwt(filter_class: type[SafeExceptionReporterFilter]) -> bool:
    """Whether an exception reporter filter class hides a setting named ``JWT``."""
    pattern = getattr(filter_class, "hidden_settings", None)
    return bool(pattern is not None and pattern.search("JWT"))
