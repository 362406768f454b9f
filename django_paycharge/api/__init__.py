"""DRF endpoints for storefronts and back offices (mount ``django_paycharge.api.urls``).

The endpoints need Django REST framework (a dependency of the app) and
drf-spectacular for their OpenAPI schema: install ``django-paycharge[api]``.
See ``docs/api.md``.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

try:
    import drf_spectacular  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImproperlyConfigured(
        "django_paycharge.api needs drf-spectacular, which is not installed: "
        "install the API extra with `pip install 'django-paycharge[api]'`."
    ) from exc
