"""The exception reporter filter, also as a mixin for a shop's own filter."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter

from django_paycharge.checks import check_paycharge_settings
from django_paycharge.debug import HideJWTMixin, PayChargeExceptionReporterFilter, hides_jwt


class TrackerFilter(SafeExceptionReporterFilter):
    """Like an error-tracking SDK's filter: its own list of hidden settings."""

    hidden_settings = re.compile("DSN|SECRET", flags=re.IGNORECASE)


class ShopFilter(HideJWTMixin, TrackerFilter):
    pass


def warnings(settings, path):
    settings.DEFAULT_EXCEPTION_REPORTER_FILTER = path
    return [m.id for m in check_paycharge_settings() if (m.id or "").endswith("W002")]


def test_the_mixin_composes_with_a_shops_own_filter(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WIDGET_JWT": "x.y.z"}
    settings.TRACKER_DSN = "https://key@tracker.example/1"
    shown = ShopFilter().get_safe_settings()
    assert shown["TRACKER_DSN"] == ShopFilter.cleansed_substitute  # the shop's filter still works
    assert shown["PAYCHARGE"]["JWT"] == ShopFilter.cleansed_substitute  # and ours
    assert shown["PAYCHARGE"]["WIDGET_JWT"] == ShopFilter.cleansed_substitute
    assert shown["PAYCHARGE"]["BASE_URL"] == settings.PAYCHARGE["BASE_URL"]
    assert hides_jwt(ShopFilter) and hides_jwt(PayChargeExceptionReporterFilter)
    assert not hides_jwt(TrackerFilter)


def test_the_check_accepts_the_composed_filter_and_warns_without_it(settings):
    assert warnings(settings, "tests.test_debug.ShopFilter") == []
    assert warnings(settings, "tests.test_debug.TrackerFilter") == ["django_paycharge.W002"]
    assert warnings(settings, "django.views.debug.SafeExceptionReporterFilter") == [
        "django_paycharge.W002"
    ]
