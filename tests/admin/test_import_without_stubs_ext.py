"""The admin imports in a shop that has neither django-tasks nor django-stubs-ext installed."""

from __future__ import annotations

import sys
import textwrap

import pytest

from tests.waiting import run


@pytest.mark.db_independent
@pytest.mark.slow  # a Python process of its own
def test_admin_and_api_import_without_django_stubs_ext():
    script = textwrap.dedent(
        """
        import sys

        # A None entry makes both import and importlib.util.find_spec see no module.
        for name in ("django_tasks", "django_stubs_ext", "django_tasks_db"):
            sys.modules[name] = None
        import django
        from django.conf import settings
        settings.configure(
            INSTALLED_APPS=[
                "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                "django.contrib.sessions", "django.contrib.messages", "rest_framework",
                "django_paycharge",
            ],
            PAYCHARGE={"SECRET": "s", "JWT": "a.b.c"},
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        )
        django.setup()
        from django.contrib import admin
        admin.autodiscover()
        import django_paycharge.admin, django_paycharge.urls, django_paycharge.api.urls
        print("ok", len(admin.site._registry))
        """
    )
    result = run([sys.executable, "-c", script], "the admin imported without django-stubs-ext")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("ok")
