"""Django settings of the benchmarks (never used by the test suite).

Chosen by environment variables that the benchmark scripts set for their
worker processes:

- ``BENCH_DB``: ``sqlite`` (a file, ``BENCH_DB_NAME`` is its path) or
  ``postgres`` (``BENCH_DB_NAME`` is the database; the server comes from the
  ``PAYCHARGE_TEST_PG_*`` variables that ``scripts/pg.sh`` exports);
- ``BENCH_GATEWAY_URL``: base URL of the fake gateway server;
- ``BENCH_TASKS=1``: background processing through django-tasks-db
  (the view stores and enqueues, ``manage.py db_worker`` processes);
- ``BENCH_WEBHOOK_TOKEN``: the webhook auth token the receiver accepts;
- ``BENCH_ACCOUNTS=2``: a second account (``second``), as the admin benchmark's mirror has;
- ``BENCH_PG_SERVER_SIDE_BINDING=1``: PostgreSQL with psycopg's server-side binding and
  prepared statements.
"""

from __future__ import annotations

import os
from importlib.util import find_spec

from django_paycharge.testing import TEST_JWT, TEST_SECRET, TEST_STORE_ID

SECRET_KEY = "bench-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "bench.urls"
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_paycharge",
    *([] if find_spec("django.tasks") else ["django_tasks"]),
    "django_tasks_db",
    # The 3-column table of the webhook receipt's floor (bench/minimal_webhook.py).
    "bench.floor",
]

MIDDLEWARE = [
    "bench.middleware.QueryCountMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
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
DEFAULT_EXCEPTION_REPORTER_FILTER = "django_paycharge.debug.PayChargeExceptionReporterFilter"
# The admin benchmark logs in once per process: a cheap hasher keeps setup short.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if os.environ.get("BENCH_DB", "sqlite") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("PAYCHARGE_TEST_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("PAYCHARGE_TEST_PG_PORT", "5432"),
            "USER": os.environ.get("PAYCHARGE_TEST_PG_USER", "postgres"),
            "PASSWORD": os.environ.get("PAYCHARGE_TEST_PG_PASSWORD", ""),
            "NAME": os.environ.get("BENCH_DB_NAME", "paycharge_bench"),
            # Long-lived connections, as a production deployment would use
            # (BENCH_CONN_MAX_AGE=0: Django's default, a connection a request).
            "CONN_MAX_AGE": int(os.environ.get("BENCH_CONN_MAX_AGE", "600")),
            # Names the process in pg_stat_activity: the receipt cost counts the CPU of
            # the web processes' own server processes (bench/webhook_receipt.py).
            "OPTIONS": {
                "application_name": os.environ.get("BENCH_PG_APPLICATION", "bench"),
                # BENCH_PG_SERVER_SIDE_BINDING=1: psycopg binds parameters on the server
                # and prepares statements run often (psycopg's own threshold; Django's
                # default is never), settings a shop may choose.
                "server_side_binding": os.environ.get("BENCH_PG_SERVER_SIDE_BINDING") == "1",
                "prepare_threshold": (
                    5 if os.environ.get("BENCH_PG_SERVER_SIDE_BINDING") == "1" else None
                ),
            },
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("BENCH_DB_NAME", "/tmp/paycharge-bench.sqlite3"),
            "CONN_MAX_AGE": int(os.environ.get("BENCH_CONN_MAX_AGE", "600")),
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                # BENCH_SQLITE_IMMEDIATE=1: the installation guide's settings (a busy
                # time-out, IMMEDIATE transactions), as a shop that follows it runs.
                **(
                    {"timeout": 20, "transaction_mode": "IMMEDIATE"}
                    if os.environ.get("BENCH_SQLITE_IMMEDIATE") == "1"
                    else {}
                ),
            },
        }
    }

PAYCHARGE = {
    "BASE_URL": os.environ.get("BENCH_GATEWAY_URL", "http://127.0.0.1:8765"),
    "SECRET": TEST_SECRET,
    "JWT": TEST_JWT,
    "STORE_ID": TEST_STORE_ID,
    "WEBHOOK_AUTH_TOKENS": [os.environ.get("BENCH_WEBHOOK_TOKEN", "bench-webhook-token")],
}
if os.environ.get("BENCH_ACCOUNTS") == "2":
    # The admin benchmark's mirror holds two accounts' charges (and three stores): the
    # second is configured, as a shop with two would (the account and store filters offer it).
    PAYCHARGE["ACCOUNTS"] = {
        "second": {
            "SECRET": TEST_SECRET,
            "JWT": TEST_JWT,
            "STORE_ID": "00000000-0000-0000-0000-000000050001",
        }
    }

if os.environ.get("BENCH_TASKS") == "1":
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "root": {"handlers": [], "level": "WARNING"},
}
