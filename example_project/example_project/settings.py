"""Settings of the example shop: everything from environment variables, with safe defaults.

See docs/example-shop.md for the table of variables. Nothing here is secret:
credentials come from the environment, and the secret key is generated once
into the data directory when ``SHOP_SECRET_KEY`` is not set.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .env import env_bool, env_list, env_str, parse_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("SHOP_DATA_DIR", str(BASE_DIR / ".data"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """``SHOP_SECRET_KEY``, else a random key kept in the data directory (never a fixed one)."""
    configured = env_str("SHOP_SECRET_KEY")
    if configured:
        return configured
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("SHOP_DEBUG", False)
ALLOWED_HOSTS = env_list("SHOP_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("SHOP_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_paycharge",
    "shop",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "shop.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
WSGI_APPLICATION = "example_project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Project templates first: templates/django_paycharge/base.html puts the
        # payment app's pages in the shop's layout.
        "DIRS": [BASE_DIR / "templates"],
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

# SQLite in the data directory unless DATABASE_URL says otherwise (postgres://...).
_database_url = env_str("DATABASE_URL")
if _database_url:
    DATABASES: dict[str, dict[str, Any]] = {"default": parse_database_url(_database_url)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "shop.sqlite3",
            # The webhook, the worker and the customer's browser write at once:
            # WAL and immediate transactions make them wait instead of failing.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("ja", "日本語")]
USE_I18N = True
USE_TZ = True
TIME_ZONE = env_str("SHOP_TIME_ZONE", "Asia/Tokyo")

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"

# Error pages and e-mails hide PAYCHARGE's credentials (SECRET, JWT) too.
DEFAULT_EXCEPTION_REPORTER_FILTER = "django_paycharge.debug.PayChargeExceptionReporterFilter"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"  # the provider's redirect back is a top-level GET: Lax is sent
SESSION_COOKIE_SECURE = env_bool("SHOP_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# -- payments -----------------------------------------------------------------------------

_base_url = env_str("PAYCHARGE_BASE_URL", "http://127.0.0.1:8765").rstrip("/")
_base = urlsplit(_base_url)
# Plain-http provider URLs only for a gateway on this machine (the fake); never in production.
_loopback_http = _base.scheme == "http" and _base.hostname in {"127.0.0.1", "localhost", "::1"}


def _fake_default(name: str) -> str | None:
    """The fake gateway's public test credentials, for a gateway on loopback only.

    So that ``manage.py`` (migrate, makemigrations --check, shell) works on a fresh
    clone without any environment; scripts/demo passes fresh credentials instead.
    """
    if not _loopback_http:
        return None
    from django_paycharge import testing

    value: str = getattr(testing, name)
    return value


PAYCHARGE: dict[str, Any] = {
    "BASE_URL": _base_url,
    "SECRET": env_str("PAYCHARGE_SECRET") or _fake_default("TEST_SECRET"),
    "JWT": env_str("PAYCHARGE_JWT") or _fake_default("TEST_JWT"),
    # The checkout page's widget gets a browser app token's JWT, never the server's above.
    "WIDGET_JWT": env_str("PAYCHARGE_WIDGET_JWT") or _fake_default("TEST_WIDGET_JWT"),
    "STORE_ID": env_str("PAYCHARGE_STORE_ID") or None,
    "MERCHANT_ID": env_str("PAYCHARGE_MERCHANT_ID") or None,
    "WEBHOOK_AUTH_TOKENS": env_list("PAYCHARGE_WEBHOOK_AUTH_TOKENS"),
    "RETURN_URL_HOOK": "shop.payments.return_url",
    "ALLOW_HTTP_ISSUER_URLS": _loopback_http,
    "TASKS": env_str("PAYCHARGE_TASKS", "auto"),
    # Metrics (docs/monitoring.md): "prometheus" needs django-paycharge[prometheus].
    "TELEMETRY": env_list("PAYCHARGE_TELEMETRY", []),
}
# Documented in docs/settings.md; left to the app's defaults unless set.
if env_str("PAYCHARGE_TIMEOUT"):
    PAYCHARGE["TIMEOUT"] = float(env_str("PAYCHARGE_TIMEOUT"))
if env_str("PAYCHARGE_MAX_RETRIES"):
    PAYCHARGE["MAX_RETRIES"] = int(env_str("PAYCHARGE_MAX_RETRIES"))

#: The shop's own settings (read by shop.conf).
SHOP_CURRENCY = env_str("SHOP_CURRENCY", "JPY")
#: Seconds the pay request may take, waiting for a new charge to leave "pending"
#: (what is still pending then is completed by the webhook).
SHOP_PAY_TIME_LIMIT = float(env_str("SHOP_PAY_TIME_LIMIT", "20"))
#: The bearer token of the metrics endpoint (shop/ops.py); empty: the endpoint refuses everyone.
SHOP_METRICS_TOKEN = env_str("SHOP_METRICS_TOKEN", "")
#: The demo bank page completes payments on the fake gateway; only for a gateway on loopback.
SHOP_DEMO_BANK = env_bool("SHOP_DEMO_BANK", _loopback_http)

# Webhooks processed by a worker instead of inside the request: SHOP_TASKS=db uses
# the database backend of django-tasks (pip install 'django-paycharge[tasks]').
if env_str("SHOP_TASKS") == "db":
    INSTALLED_APPS += ["django_tasks", "django_tasks_db"]
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
elif env_str("SHOP_TASKS"):
    raise ValueError("SHOP_TASKS must be empty (process webhooks inline) or 'db'.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "django_paycharge": {"handlers": ["console"], "level": "INFO"},
        "shop": {"handlers": ["console"], "level": "INFO"},
        # A 500's traceback in the log, with DEBUG off too (no locals: no secrets).
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}
