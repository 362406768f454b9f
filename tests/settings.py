"""Settings for the test suite. ``PAYCHARGE_TEST_DB=postgres`` selects PostgreSQL.

PostgreSQL is reached through ``PAYCHARGE_TEST_PG_*`` variables (host, port,
user, password, name); ``scripts/test`` starts a throwaway cluster and sets them.
"""

from __future__ import annotations

import os
import tempfile
from importlib.util import find_spec
from typing import Any

SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "tests.urls"
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_paycharge",
    # A real task backend and worker for background webhook processing tests
    # (the TASKS setting itself is only set by the tests that want it).
    *([] if find_spec("django.tasks") else ["django_tasks"]),
    "django_tasks_db",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

STATIC_URL = "/static/"
# Django 6.1 configures e-mail through MAILERS (and warns when mail is sent
# without it); earlier versions ignore the setting. The test runner swaps the
# backend for its in-memory one either way.
MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
DEFAULT_EXCEPTION_REPORTER_FILTER = "django_paycharge.debug.PayChargeExceptionReporterFilter"

if os.environ.get("PAYCHARGE_TEST_DB", "sqlite") == "postgres":
    DATABASES: dict[str, dict[str, Any]] = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("PAYCHARGE_TEST_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("PAYCHARGE_TEST_PG_PORT", "5432"),
            "USER": os.environ.get("PAYCHARGE_TEST_PG_USER", "postgres"),
            "PASSWORD": os.environ.get("PAYCHARGE_TEST_PG_PASSWORD", ""),
            "NAME": os.environ.get("PAYCHARGE_TEST_PG_NAME", "paycharge"),
        }
    }
else:
    # A file, not :memory:, so that subprocesses (crash and concurrency tests)
    # can open the same test database.
    _sqlite = os.path.join(tempfile.gettempdir(), f"paycharge-test-{os.getpid()}.sqlite3")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _sqlite,
            "TEST": {"NAME": _sqlite},
            # Live-server tests write from several threads: immediate transactions
            # wait for the lock instead of failing a read-to-write upgrade at once.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }

# A child process of a test opens the parent's test database by name.
if os.environ.get("PAYCHARGE_CHILD_DB_NAME"):
    DATABASES["default"]["NAME"] = os.environ["PAYCHARGE_CHILD_DB_NAME"]
    DATABASES["default"].pop("TEST", None)

# Test credentials of the fake gateway (django_paycharge.testing). Not real secrets.
PAYCHARGE: dict[str, Any] = {
    "BASE_URL": "https://fake-gateway.paycharge.test",
    "SECRET": "test-secret-0123456789",
    "JWT": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        "eyJzdWIiOiJ0ZXN0LWFwcCIsImlzcyI6InBheWNoYXJnZS1mYWtlIn0."
        "c2lnbmF0dXJlLW9mLXRoZS10ZXN0LXRva2Vu"
    ),
    "STORE_ID": "11111111-1111-4111-8111-111111111111",
    "MERCHANT_ID": "22222222-2222-4222-8222-222222222222",
    # Retries stay on, but wait milliseconds, not seconds.
    "RETRY_BACKOFF": 0.005,
    "RETRY_BACKOFF_MAX": 0.05,
    # A create whose outcome stays unknown is asked about for a moment, not 10 s.
    "CREATE_SETTLE_SECONDS": 0.2,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"django_paycharge": {"level": "DEBUG"}},
}

# Staff users are made and logged in by hundreds of tests: the default hasher spends about
# a third of a CPU second on each password, the fast one nothing (Django's own advice for
# test settings). No test here is about password hashing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
