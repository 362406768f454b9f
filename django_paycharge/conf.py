"""Settings access: one ``PAYCHARGE`` dict, read at call time.

``PAYCHARGE`` holds the default account's keys at its top level; more accounts
go under ``PAYCHARGE["ACCOUNTS"] = {"name": {...same keys...}}``, each key
falling back to the top-level value (credentials excepted). See
``docs/settings.md`` for every key.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables

from .client.options import ClientOptions, option_problems
from .exceptions import ConfigurationError

DEFAULT_ACCOUNT = "default"

K = TypeVar("K")
V = TypeVar("V")

#: Defaults of every key. Keys of an account: the first block.
DEFAULTS: dict[str, Any] = {
    # Per account (also the default account's top-level keys).
    "BASE_URL": "https://api.univapay.com",
    "SECRET": None,
    "JWT": None,
    "STORE_ID": None,
    "MERCHANT_ID": None,
    "TIMEOUT": (5.0, 30.0),
    "MAX_RETRIES": 3,
    "RETRY_BACKOFF": 0.5,
    "RETRY_BACKOFF_MAX": 8.0,
    "MAX_RETRY_AFTER": 30.0,
    "POLLING_TIMEOUT": 60.0,
    "POOL_SIZE": 20,
    "USER_AGENT": None,
    # The JWT of a browser app token, for the payment widget (the page sees it).
    "WIDGET_JWT": None,
    # App-wide.
    "ACCOUNTS": {},
    # The default account's webhook tokens; a named account has its own (see
    # webhook_auth_tokens).
    "WEBHOOK_AUTH_TOKENS": [],
    "WEBHOOK_MAX_BODY_BYTES": 1024 * 1024,
    "WEBHOOK_LEASE_SECONDS": 300,
    "RETURN_URL": "/",
    "RETURN_URL_HOOK": None,
    "ALLOW_HTTP_ISSUER_URLS": False,
    "CHARGE_ACCESS_HOOK": "django_paycharge.access.session_owns_charge",
    "SHOP_URL": "/",
    "TASKS": "auto",
    "SYNC_WINDOWS": 8,
    # Charge requests (services.create_charge, paycharge_recover): seconds.
    "CREATE_SETTLE_SECONDS": 10.0,
    "CHARGE_REQUEST_MAX_AGE": 900,
    "CHARGE_REQUEST_GRACE": 300,
    # Background work (django_paycharge.tasks, .periodic; docs/deployment.md).
    "TASK_BACKEND": "default",
    "TASK_QUEUE": "default",
    "DELIVERY_HANDOFF": None,
    "SWEEP_AFTER": 300,
    "DELIVERY_RETENTION_DAYS": 90,
    # Admin (django_paycharge.admin).
    "ADMIN_ESTIMATED_COUNT_THRESHOLD": 10_000,
    "ADMIN_CURRENCIES": ["JPY", "USD", "EUR", "GBP", "CNY", "KRW", "TWD", "HKD", "AUD", "SGD"],
    "ADMIN_ERROR_CODES": {},
    "ADMIN_MAX_GATEWAY_CALLS": 50,
    "ADMIN_SYNC_MAX_PAGES": 20,
    "ORDER_URL_HOOK": None,
    # Monitoring (docs/monitoring.md): metrics and traces, and when a sync counts as behind.
    "TELEMETRY": [],
    "SYNC_BEHIND_AFTER": 7200,
    # DRF API (django_paycharge.api).
    "API_CHARGE_HOOK": None,
    "API_CREATE_PERMISSION_CLASSES": ["django_paycharge.api.permissions.IsStaffUser"],
    "API_DIRECT_AMOUNT_PERMISSION_CLASSES": ["django_paycharge.api.permissions.IsStaffUser"],
    # Capture, cancel, refund: staff holding the action's permission (as in the admin).
    "API_ACTION_PERMISSION_CLASSES": [
        "django_paycharge.api.permissions.IsStaffUser",
        "django_paycharge.api.lifecycle_views.HasChargeActionPermission",
    ],
    "API_CREATE_THROTTLE_CLASSES": ["django_paycharge.api.throttling.ChargeCreateThrottle"],
    "API_CREATE_THROTTLE_RATE": "20/minute",
    "API_RETRY_AFTER": 30,
}

#: The account keys that are client options (every field of
#: :class:`~django_paycharge.client.options.ClientOptions`), checked by the
#: client's own rules. The back-off's two keys keep the names they were
#: documented under.
CLIENT_OPTIONS = {
    "BASE_URL": "base_url",
    "SECRET": "secret",
    "JWT": "jwt",
    "TIMEOUT": "timeout",
    "MAX_RETRIES": "max_retries",
    "RETRY_BACKOFF": "backoff_base",
    "RETRY_BACKOFF_MAX": "backoff_max",
    "MAX_RETRY_AFTER": "max_retry_after",
    "POLLING_TIMEOUT": "polling_timeout",
    "POOL_SIZE": "pool_size",
    "USER_AGENT": "user_agent",
}
ACCOUNT_KEYS = (*CLIENT_OPTIONS, "STORE_ID", "MERCHANT_ID", "WIDGET_JWT")
# Credentials and the default store are never inherited by a named account:
# mixing two accounts' credentials is the mistake this would invite.
_NOT_INHERITED = ("SECRET", "JWT", "STORE_ID", "MERCHANT_ID", "WIDGET_JWT")
_CREDENTIALS = ("SECRET", "JWT", "WIDGET_JWT")
# Tighter than the client's own limits: in a settings file, 100 retries or a
# back-off of an hour is a typo, not a choice. Key: (whole number?, low, high).
_SETTING_RANGES: dict[str, tuple[bool, float, float]] = {
    "MAX_RETRIES": (True, 0, 10),
    "RETRY_BACKOFF": (False, 0, 300),
    "RETRY_BACKOFF_MAX": (False, 0, 300),
    "MAX_RETRY_AFTER": (False, 0, 300),
    "POLLING_TIMEOUT": (False, 1, 300),
    "POOL_SIZE": (True, 1, 1000),
}
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Account(ClientOptions):
    """One configured gateway account: its client's options, its name and its ids.

    ``repr`` never shows the credentials.
    """

    name: str
    store_id: uuid.UUID | None = None
    merchant_id: uuid.UUID | None = None


class Hidden(str):
    """A credential: a plain ``str`` whose ``repr`` does not show it.

    Django's DEBUG page shows every frame's locals unfiltered (its filter only
    works with DEBUG off), so settings dicts that hold these stay unreadable
    there, in error e-mails and in logged reprs.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'********'"


def _hide(value: Any) -> Any:
    return Hidden(value) if isinstance(value, str) and value else value


def _user_settings() -> Mapping[str, Any]:
    value = getattr(settings, "PAYCHARGE", {})
    if not isinstance(value, Mapping):
        raise ConfigurationError(_("PAYCHARGE must be a dict."))
    return value


def get_setting(key: str) -> Any:
    """The value of an app-wide key of ``PAYCHARGE``, or its default."""
    if key not in DEFAULTS:
        raise KeyError(f"PAYCHARGE has no key {key!r}")
    return _user_settings().get(key, DEFAULTS[key])


#: Whole-number keys and their ranges (checked by :func:`get_int_setting` and the system checks).
INT_SETTINGS = (("SYNC_WINDOWS", 1, 64), ("ADMIN_SYNC_MAX_PAGES", 1, None))


def get_int_setting(key: str, low: int, high: int | None = None) -> int:
    """An app-wide whole-number key, checked: a ConfigurationError names the key and its range."""
    value = get_setting(key)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= (high or value):
        return value
    if high is None:
        message = _("PAYCHARGE['%(key)s'] must be an integer of at least %(low)d.")
    else:
        message = _("PAYCHARGE['%(key)s'] must be an integer from %(low)d to %(high)d.")
    raise ConfigurationError(message % {"key": key, "low": low, "high": high})


#: App-wide keys holding a number of seconds, with their allowed range.
SECONDS_KEYS: dict[str, tuple[float, float]] = {
    "CREATE_SETTLE_SECONDS": (0.0, 300.0),
    "CHARGE_REQUEST_MAX_AGE": (1.0, 30 * 86400.0),
    "CHARGE_REQUEST_GRACE": (0.0, 86400.0),
    "SYNC_BEHIND_AFTER": (60.0, 30 * 86400.0),
}


def seconds_problem(key: str, value: Any) -> str | None:
    """Why ``value`` is not a valid ``PAYCHARGE[key]`` number of seconds, or None."""
    low, high = SECONDS_KEYS[key]
    if isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high:
        return None
    return _("PAYCHARGE['%(key)s'] must be a number of seconds from %(low)g to %(high)g.") % {
        "key": key,
        "low": low,
        "high": high,
    }


def get_seconds(key: str) -> float:
    """A validated app-wide number of seconds (see :data:`SECONDS_KEYS`)."""
    value = get_setting(key)
    problem = seconds_problem(key, value)
    if problem:
        raise ConfigurationError(problem)
    return float(value)


def account_names() -> list[str]:
    """The default account's name followed by the names under ``ACCOUNTS``."""
    accounts = _user_settings().get("ACCOUNTS", {}) or {}
    names = [DEFAULT_ACCOUNT]
    if isinstance(accounts, Mapping):
        names.extend(n for n in accounts if n != DEFAULT_ACCOUNT)
    return names


# Its locals hold the credentials: keep them off DEBUG pages and error e-mails.
@sensitive_variables()
def raw_account_settings(name: str | None = None) -> tuple[str, dict[str, Any]]:
    """The merged, unvalidated keys of one account, and the settings path they live at."""
    user = _user_settings()
    top = {k: user.get(k, DEFAULTS[k]) for k in ACCOUNT_KEYS}
    for key in _CREDENTIALS:
        top[key] = _hide(top[key])
    if name is None or name == DEFAULT_ACCOUNT:
        return "PAYCHARGE", top
    accounts = user.get("ACCOUNTS", {}) or {}
    if not isinstance(accounts, Mapping) or name not in accounts:
        raise ConfigurationError(
            _(
                "No account named %(name)s: add it to PAYCHARGE['ACCOUNTS'] "
                "(configured: %(configured)s)."
            )
            % {"name": repr(name), "configured": ", ".join(account_names())}
        )
    own = accounts[name]
    if not isinstance(own, Mapping):
        raise ConfigurationError(
            _("PAYCHARGE['ACCOUNTS'][%(name)s] must be a dict.") % {"name": repr(name)}
        )
    merged = {k: (own.get(k) if k in _NOT_INHERITED else own.get(k, top[k])) for k in ACCOUNT_KEYS}
    for key in _CREDENTIALS:
        merged[key] = _hide(merged[key])
    return f"PAYCHARGE['ACCOUNTS'][{name!r}]", merged


# Its locals hold the credentials: keep them off DEBUG pages and error e-mails.
@sensitive_variables()
def account_problems(where: str, raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with one account's keys, as ``(key, message)`` pairs.

    ``key`` is the setting's name, or ``"JWT_SHAPE"`` for a JWT that is set but
    is not shaped like one (the checks give it its own id).

    Shared by :func:`get_account` (which raises on the first) and the system
    checks (which report them all).
    """
    problems: list[tuple[str, str]] = []

    def add(key: str, message: str, setting: str | None = None, **values: float) -> None:
        # Messages name the setting as it is written in settings.py: PAYCHARGE['KEY'].
        problems.append((key, message % {"setting": f"{where}['{setting or key}']", **values}))

    bad = {e.field for e in option_problems({o: raw.get(k) for k, o in CLIENT_OPTIONS.items()})}
    if "base_url" in bad:
        add("BASE_URL", _("%(setting)s must be an absolute http(s) URL."))
    for key in ("SECRET", "JWT"):
        if not raw.get(key):
            add(key, _("%(setting)s is not set: copy it from the app token."))
        elif not isinstance(raw[key], str):
            add(key, _("%(setting)s must be a string."))
        elif CLIENT_OPTIONS[key] in bad:
            add(key, _("%(setting)s must not hold spaces or control characters."))
    jwt = raw.get("JWT")
    if isinstance(jwt, str) and jwt and not looks_like_jwt(jwt):
        message = _("%(setting)s is not a JWT (three base64url parts separated by dots).")
        add("JWT_SHAPE", message, "JWT")
    for key in ("STORE_ID", "MERCHANT_ID"):
        if raw.get(key) is not None and _as_uuid(raw[key]) is None:
            add(key, _("%(setting)s must be a UUID."))
    if "timeout" in bad:
        add(
            "TIMEOUT",
            _(
                "%(setting)s must be a positive number of seconds or a "
                "(connect, read) pair of them."
            ),
        )
    for key, (whole, low, high) in _SETTING_RANGES.items():
        if CLIENT_OPTIONS[key] in bad or not low <= raw[key] <= high:
            if whole:
                message = _("%(setting)s must be an integer from %(low)d to %(high)d.")
            else:
                message = _("%(setting)s must be a number of seconds from %(low)g to %(high)g.")
            add(key, message, low=low, high=high)
    if "user_agent" in bad:
        add("USER_AGENT", _("%(setting)s must be one line of printable ASCII text, or None."))
    return problems


def get_account(name: str | None = None) -> Account:
    """The validated settings of one account (the default one when ``name`` is None).

    Checked once and kept until ``PAYCHARGE`` changes: every charge request asks
    for its account, on the path a customer waits on. A misconfigured account
    is not kept: it raises on every call.
    """
    key = name or DEFAULT_ACCOUNT
    account = _accounts.get(key)
    if account is None:
        account = _accounts[key] = _checked_account(name)
    return account


_accounts: dict[str, Account] = {}


# Its locals hold the credentials: keep them off DEBUG pages and error e-mails.
@sensitive_variables()
def _checked_account(name: str | None) -> Account:
    where, raw = raw_account_settings(name)
    problems = account_problems(where, raw)
    if problems:
        raise ConfigurationError(problems[0][1])
    options = ClientOptions.checked(**{o: raw[key] for key, o in CLIENT_OPTIONS.items()})
    return Account(
        **options.values(),
        name=name or DEFAULT_ACCOUNT,
        store_id=_as_uuid(raw["STORE_ID"]),
        merchant_id=_as_uuid(raw["MERCHANT_ID"]),
    )


# Its locals hold the credentials: keep them off DEBUG pages and error e-mails.
@sensitive_variables()
def widget_problems(where: str, raw: Mapping[str, Any]) -> list[str]:
    """What is wrong with one account's ``WIDGET_JWT`` (empty when unset or fine)."""
    value = raw.get("WIDGET_JWT")
    setting = f"{where}['WIDGET_JWT']"
    if value is None or value == "":
        return []
    if not isinstance(value, str) or not looks_like_jwt(value):
        return [
            _("%(setting)s is not a JWT (three base64url parts separated by dots).")
            % {"setting": setting}
        ]
    if value == raw.get("JWT"):
        return [
            _(
                "%(setting)s is the server's app token (JWT): pages would show it. Create an "
                "app token for the browser (a widget token) and use its JWT."
            )
            % {"setting": setting}
        ]
    return []


# Its locals hold the credentials: keep them off DEBUG pages and error e-mails.
@sensitive_variables()
def widget_jwt(name: str | None = None) -> str:
    """The JWT a page may show to the payment widget: ``WIDGET_JWT``, never ``JWT``."""
    where, raw = raw_account_settings(name)
    problems = widget_problems(where, raw)
    if problems:
        raise ConfigurationError(problems[0])
    if not raw.get("WIDGET_JWT"):
        raise ConfigurationError(
            _("%(setting)s is not set: copy the JWT of the browser app token (widget) here.")
            % {"setting": f"{where}['WIDGET_JWT']"}
        )
    return str(raw["WIDGET_JWT"])


def is_loopback_url(url: str) -> bool:
    """True for a URL on 127.0.0.1, localhost or ::1 (traffic that never leaves the machine)."""
    return (urlsplit(url).hostname or "") in _LOOPBACK_HOSTS


def looks_like_jwt(value: str) -> bool:
    """True when ``value`` has a JWT's shape: a JSON header and payload, base64url-encoded."""
    parts = value.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        return False
    try:
        for part in parts[:2]:
            decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
            if not isinstance(json.loads(decoded), dict):
                return False
    except (binascii.Error, ValueError):
        return False
    return True


def _as_uuid(value: Any) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


# Webhook receipt. Tokens are per account: the top-level WEBHOOK_AUTH_TOKENS are
# the default account's, and PAYCHARGE['ACCOUNTS'][name]['WEBHOOK_AUTH_TOKENS']
# a named account's. A named account without that key still accepts the
# top-level tokens (how installs before per-account tokens worked): deprecated,
# reported by the django_paycharge.W004 check, since it lets one account's
# token in at another account's URL.


@dataclass(frozen=True, slots=True)
class WebhookTokens:
    """The tokens one account's webhook URL accepts. ``repr`` never shows them."""

    account: str
    tokens: tuple[str, ...] = field(repr=False)
    #: True for a named account that has no tokens of its own (the deprecated fallback).
    inherited: bool = False


# Its locals hold the tokens: keep them off DEBUG pages and error e-mails.
@sensitive_variables()
def webhook_auth_tokens(name: str | None = None) -> WebhookTokens:
    """The configured webhook auth tokens of one account (the default one when ``name`` is None).

    Raises :class:`ConfigurationError`, naming the setting, when they are malformed.
    """
    name = name or DEFAULT_ACCOUNT
    user = _user_settings()
    where = "PAYCHARGE['WEBHOOK_AUTH_TOKENS']"
    tokens = user.get("WEBHOOK_AUTH_TOKENS", DEFAULTS["WEBHOOK_AUTH_TOKENS"])
    inherited = False
    if name != DEFAULT_ACCOUNT:
        raw_account_settings(name)  # raises for an unknown or malformed account
        own = user["ACCOUNTS"][name]
        if "WEBHOOK_AUTH_TOKENS" in own:
            where = f"PAYCHARGE['ACCOUNTS'][{name!r}]['WEBHOOK_AUTH_TOKENS']"
            tokens = own["WEBHOOK_AUTH_TOKENS"]
        else:
            inherited = bool(tokens)
    if not isinstance(tokens, list | tuple) or not all(isinstance(t, str) and t for t in tokens):
        raise ConfigurationError(
            _("%(setting)s must be a list of non-empty strings.") % {"setting": where}
        )
    return WebhookTokens(name, tuple(Hidden(t) for t in tokens), inherited)


def webhook_lease() -> timedelta:
    """How long a claim on a webhook delivery holds (``WEBHOOK_LEASE_SECONDS``)."""
    value = get_setting("WEBHOOK_LEASE_SECONDS")
    if not isinstance(value, int | float) or isinstance(value, bool) or not 1 <= value <= 86400:
        raise ConfigurationError(
            _("PAYCHARGE['WEBHOOK_LEASE_SECONDS'] must be a number of seconds from 1 to 86400.")
        )
    return timedelta(seconds=value)


# How many times PAYCHARGE changed in this process (override_settings, tests): a cache
# built from it asks (settings_generation) instead of being told, so no module has to
# register anything here for its cache to be dropped.
_generation = 0


@receiver(setting_changed)
def _reset_on_setting_change(*, setting: str, **kwargs: Any) -> None:
    global _generation
    if setting == "PAYCHARGE":
        _generation += 1
        _accounts.clear()


def settings_generation() -> int:
    """A number that changes whenever ``PAYCHARGE`` does: a cache built from the settings
    is stale once it differs from the number read when the cache was built."""
    return _generation


class SettingsCache(Generic[K, V]):
    """Values built from ``PAYCHARGE``, dropped once it changed (``stale`` is given them)."""

    def __init__(self, stale: Callable[[dict[K, V]], object] | None = None) -> None:
        self._values: dict[K, V] = {}
        self._generation = _generation
        self._stale = stale

    def current(self) -> dict[K, V]:
        """The values, emptied first if the settings changed since they were built."""
        if self._generation != _generation:
            old, self._values, self._generation = self._values, {}, _generation
            if self._stale is not None:
                self._stale(old)
        return self._values
