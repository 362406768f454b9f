"""System checks for the ``PAYCHARGE`` setting.

Ids are stable and never reused once retired:

- E001 a credential (SECRET or JWT) is missing or not a string
- E002 BASE_URL is not an absolute http(s) URL
- E003 JWT does not have a JWT's shape
- E004 BASE_URL uses plain HTTP outside DEBUG (loopback hosts excepted)
- E005 STORE_ID or MERCHANT_ID is not a UUID
- E006 TIMEOUT, MAX_RETRIES, RETRY_BACKOFF or RETRY_BACKOFF_MAX is malformed
- E007 PAYCHARGE or PAYCHARGE['ACCOUNTS'] is not a dict
- E008 an app-wide key is malformed (WEBHOOK_AUTH_TOKENS, RETURN_URL, ...)
- W001 PAYCHARGE holds a key this app does not know (a typo?)
- W002 the exception reporter filter would show PAYCHARGE['JWT'] on error pages and e-mails
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.utils.translation import gettext as _

from . import conf
from .exceptions import ConfigurationError

_KEY_IDS = {
    "SECRET": "E001",
    "JWT": "E001",
    "JWT_SHAPE": "E003",
    "BASE_URL": "E002",
    "STORE_ID": "E005",
    "MERCHANT_ID": "E005",
    "TIMEOUT": "E006",
    "MAX_RETRIES": "E006",
    "RETRY_BACKOFF": "E006",
    "RETRY_BACKOFF_MAX": "E006",
}


def _id(code: str) -> str:
    return f"django_paycharge.{code}"


@register(Tags.compatibility)
def check_paycharge_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    user = getattr(settings, "PAYCHARGE", None)
    if user is None:
        return [
            Error(
                _("The PAYCHARGE setting is missing."),
                hint=_("Add PAYCHARGE = {'SECRET': ..., 'JWT': ..., 'STORE_ID': ...} to settings."),
                id=_id("E001"),
            )
        ]
    if not isinstance(user, Mapping):
        return [Error(_("PAYCHARGE must be a dict."), id=_id("E007"))]
    messages: list[CheckMessage] = []
    for key in user:
        if key not in conf.DEFAULTS:
            messages.append(
                Warning(
                    _("PAYCHARGE has an unknown key %(key)s.") % {"key": repr(key)},
                    hint=_known_keys(),
                    id=_id("W001"),
                )
            )
    accounts = user.get("ACCOUNTS", {})
    if not isinstance(accounts, Mapping):
        messages.append(Error(_("PAYCHARGE['ACCOUNTS'] must be a dict of dicts."), id=_id("E007")))
        accounts = {}
    for name in [conf.DEFAULT_ACCOUNT, *accounts]:
        messages.extend(_account_messages(name))
    messages.extend(_app_wide_messages(user))
    messages.extend(_reporter_filter_messages())
    return messages


def _reporter_filter_messages() -> list[CheckMessage]:
    from django.utils.module_loading import import_string

    from .debug import hides_jwt

    path = settings.DEFAULT_EXCEPTION_REPORTER_FILTER
    if hides_jwt(import_string(path)):
        return []
    return [
        Warning(
            _(
                "%(path)s does not hide PAYCHARGE['JWT']: it would show on the DEBUG error page "
                "and in error e-mails."
            )
            % {"path": path},
            hint=_(
                "Set DEFAULT_EXCEPTION_REPORTER_FILTER = "
                "'django_paycharge.debug.PayChargeExceptionReporterFilter' (or a subclass "
                "whose hidden_settings matches JWT)."
            ),
            id=_id("W002"),
        )
    ]


def _account_messages(name: str) -> list[CheckMessage]:
    try:
        where, raw = conf.raw_account_settings(name)
    except ConfigurationError as exc:
        return [Error(exc.message, id=_id("E007"))]
    messages: list[CheckMessage] = [
        Error(
            message,
            hint=_("Fix %(setting)s.") % {"setting": f"{where}['{key.removesuffix('_SHAPE')}']"},
            id=_id(_KEY_IDS[key]),
        )
        for key, message in conf.account_problems(where, raw)
    ]
    base_url = raw.get("BASE_URL")
    if (
        isinstance(base_url, str)
        and base_url.startswith("http://")
        and not settings.DEBUG
        and not conf.is_loopback_url(base_url)
    ):
        messages.append(
            Error(
                _("%(setting)s uses plain HTTP: credentials would cross the network unencrypted.")
                % {"setting": f"{where}['BASE_URL']"},
                hint=_("Use the https:// address of the gateway."),
                id=_id("E004"),
            )
        )
    return messages


def _app_wide_messages(user: Mapping[str, Any]) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    tokens = user.get("WEBHOOK_AUTH_TOKENS", [])
    if not isinstance(tokens, list | tuple) or not all(isinstance(t, str) and t for t in tokens):
        messages.append(
            Error(
                _("PAYCHARGE['WEBHOOK_AUTH_TOKENS'] must be a list of non-empty strings."),
                id=_id("E008"),
            )
        )
    limit = user.get("WEBHOOK_MAX_BODY_BYTES", conf.DEFAULTS["WEBHOOK_MAX_BODY_BYTES"])
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1024:
        messages.append(
            Error(
                _("PAYCHARGE['WEBHOOK_MAX_BODY_BYTES'] must be an integer of at least 1024."),
                id=_id("E008"),
            )
        )
    for key, low, high in conf.INT_SETTINGS:
        try:
            conf.get_int_setting(key, low, high)
        except ConfigurationError as exc:
            messages.append(Error(exc.message, id=_id("E008")))
    return_url = user.get("RETURN_URL", conf.DEFAULTS["RETURN_URL"])
    if not isinstance(return_url, str) or not return_url:
        messages.append(
            Error(_("PAYCHARGE['RETURN_URL'] must be a non-empty URL or path."), id=_id("E008"))
        )
    return messages


def _known_keys() -> str:
    return _("Known keys: %(keys)s.") % {"keys": ", ".join(sorted(conf.DEFAULTS))}
