"""DRF endpoints for storefronts and back offices (mount ``django_paycharge.api.urls``).

The endpoints need Django REST framework, django-filter and drf-spectacular (for
their OpenAPI schema), none of them a dependency of the app: install
``django-paycharge[api]``. See ``docs/api.md``.
"""

from __future__ import annotations

from importlib.util import find_spec

from django.core.exceptions import ImproperlyConfigured

# Checked before anything imports them, so the error names the extra, not a module.
_NEEDED = {
    "rest_framework": "djangorestframework",
    "django_filters": "django-filter",
    "drf_spectacular": "drf-spectacular",
}


def _missing() -> list[str]:
    missing = []
    for module, package in _NEEDED.items():
        try:
            found = find_spec(module) is not None
        except ValueError:  # a module set to None in sys.modules (how the tests hide one)
            found = False
        if not found:
            missing.append(package)
    return missing


if _missing():
    raise ImproperlyConfigured(
        f"django_paycharge.api needs {', '.join(_missing())}, which is not installed: "
        "install the API extra with `pip install 'django-paycharge[api]'`."
    )
