"""Reading settings from environment variables, with no dependency beyond the stdlib."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

# DATABASE_URL schemes this parser knows, and the Django backend each one means.
_ENGINES = {
    "postgres": "django.db.backends.postgresql",
    "postgresql": "django.db.backends.postgresql",
    "pgsql": "django.db.backends.postgresql",
    "sqlite": "django.db.backends.sqlite3",
}


def env_str(name: str, default: str = "") -> str:
    """The variable's value, or ``default`` when it is unset or empty."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); ``default`` when unset."""
    value = os.environ.get(name)
    if value is None:
        return default
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}.")


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    """A comma-separated list, blanks dropped."""
    value = os.environ.get(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_database_url(url: str) -> dict[str, Any]:
    """A Django ``DATABASES`` entry from a URL.

    ``postgres://user:password@host:5432/name?sslmode=require`` (query
    parameters become ``OPTIONS``), ``sqlite:////absolute/path.sqlite3`` or
    ``sqlite:///relative/path.sqlite3``. Percent-encoded parts are decoded.
    """
    parts = urlsplit(url)
    engine = _ENGINES.get(parts.scheme.lower())
    if engine is None:
        known = ", ".join(sorted(_ENGINES))
        raise ValueError(f"DATABASE_URL: unsupported scheme {parts.scheme!r} (use one of {known}).")
    if engine.endswith("sqlite3"):
        # sqlite:///rel.db -> "rel.db"; sqlite:////abs.db -> "/abs.db".
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        if not path:
            raise ValueError("DATABASE_URL: a sqlite URL needs a file path.")
        return {"ENGINE": engine, "NAME": path}
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ValueError("DATABASE_URL: the database name is missing (…/name).")
    return {
        "ENGINE": engine,
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": unquote(parts.hostname or ""),
        "PORT": str(parts.port or ""),
        "OPTIONS": dict(parse_qsl(parts.query)),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
