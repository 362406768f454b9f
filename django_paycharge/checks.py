"""System checks for the ``PAYCHARGE`` setting.

Ids are stable and never reused once retired:

- E001 a credential (SECRET or JWT) is missing or not a string
- E002 BASE_URL is not an absolute http(s) URL
- E003 JWT does not have a JWT's shape
- E004 BASE_URL uses plain HTTP outside DEBUG (loopback hosts excepted)
- E005 STORE_ID or MERCHANT_ID is not a UUID
- E006 a client option of an account (TIMEOUT, MAX_RETRIES, RETRY_BACKOFF,
  RETRY_BACKOFF_MAX, MAX_RETRY_AFTER, POLLING_TIMEOUT, POOL_SIZE, USER_AGENT)
  is malformed
- E007 PAYCHARGE or PAYCHARGE['ACCOUNTS'] is not a dict
- E008 a webhook or app-wide key is malformed (an account's WEBHOOK_AUTH_TOKENS,
  WEBHOOK_LEASE_SECONDS, RETURN_URL, SHOP_URL, ORDER_URL_HOOK...)
- E020 background-work settings are wrong (TASKS mode, an empty TASK_BACKEND or
  TASK_QUEUE, DELIVERY_HANDOFF, SWEEP_AFTER, DELIVERY_RETENTION_DAYS)
- E021 WIDGET_JWT is not a JWT, or is the server's JWT (pages would show it)
- E022 TASK_BACKEND names no backend of TASKS, or TASK_QUEUE is not one of its QUEUES
- E030 TELEMETRY names an unknown backend, or one whose package is not installed
- W001 PAYCHARGE holds a key this app does not know (a typo?)
- W002 the exception reporter filter would show PAYCHARGE['JWT'] on error pages and e-mails
- W003 an SQLite database has no busy time-out or no IMMEDIATE transactions
- W004 a named account has no WEBHOOK_AUTH_TOKENS of its own (the default account's are used)
- W005 WEBHOOK_LEASE_SECONDS is shorter than one gateway request may take
- W006 (``check --deploy``) a PostgreSQL database opens a new connection for every
  request: CONN_MAX_AGE is 0 and no pool is configured
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from . import conf
from .exceptions import ConfigurationError

_KEY_IDS = {
    **dict.fromkeys(conf.CLIENT_OPTIONS, "E006"),  # the client options, but for:
    "SECRET": "E001",
    "JWT": "E001",
    "JWT_SHAPE": "E003",
    "BASE_URL": "E002",
    "STORE_ID": "E005",
    "MERCHANT_ID": "E005",
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
        messages.extend(_webhook_token_messages(name))
    messages.extend(_app_wide_messages(user))
    messages.extend(_task_messages(user))
    messages.extend(_lease_messages())
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
                "'django_paycharge.debug.PayChargeExceptionReporterFilter', or mix "
                "django_paycharge.debug.HideJWTMixin into your own filter."
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
    messages.extend(
        Error(
            message,
            hint=_("Fix %(setting)s.") % {"setting": f"{where}['WIDGET_JWT']"},
            id=_id("E021"),
        )
        for message in conf.widget_problems(where, raw)
    )
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
    limit = user.get("WEBHOOK_MAX_BODY_BYTES", conf.DEFAULTS["WEBHOOK_MAX_BODY_BYTES"])
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1024:
        messages.append(
            Error(
                _("PAYCHARGE['WEBHOOK_MAX_BODY_BYTES'] must be an integer of at least 1024."),
                id=_id("E008"),
            )
        )
    actions = user.get("API_ACTION_PERMISSION_CLASSES", [])
    if not isinstance(actions, list | tuple) or not all(
        isinstance(a, str | type) and a for a in actions
    ):
        messages.append(
            Error(
                _(
                    "PAYCHARGE['API_ACTION_PERMISSION_CLASSES'] must be a list of permission "
                    "classes or their dotted paths."
                ),
                id=_id("E008"),
            )
        )
    for key, low, high in conf.INT_SETTINGS:
        try:
            conf.get_int_setting(key, low, high)
        except ConfigurationError as exc:
            messages.append(Error(exc.message, id=_id("E008")))
    for key in conf.SECONDS_KEYS:
        problem = conf.seconds_problem(key, user.get(key, conf.DEFAULTS[key]))
        if problem:
            messages.append(Error(problem, id=_id("E008")))
    for key in ("RETURN_URL", "SHOP_URL"):
        url = user.get(key, conf.DEFAULTS[key])
        if not isinstance(url, str) or not url:
            messages.append(
                Error(
                    _("PAYCHARGE['%(key)s'] must be a non-empty URL or path.") % {"key": key},
                    id=_id("E008"),
                )
            )
    messages.extend(
        Error(problem, hint=_("It gets the charge and returns a URL or None."), id=_id("E008"))
        for problem in _hook_problems("ORDER_URL_HOOK", user.get("ORDER_URL_HOOK"))
    )
    messages.extend(
        Error(problem, hint=_("See docs/monitoring.md."), id=_id("E030"))
        for problem in _telemetry_problems(user.get("TELEMETRY", []))
    )
    return messages


def _installed(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module.split(".")[0]) is not None and find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


def _telemetry_problems(names: Any) -> list[str]:
    from .observe import BACKENDS

    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        return [_("PAYCHARGE['TELEMETRY'] must be a list of backend names.")]
    problems = []
    for name in names:
        module = BACKENDS.get(name)
        if module is None:
            problems.append(
                _("PAYCHARGE['TELEMETRY'] names %(name)r: the backends are %(known)s.")
                % {"name": name, "known": ", ".join(sorted(BACKENDS))}
            )
        elif not _installed(module):
            problems.append(
                _(
                    "PAYCHARGE['TELEMETRY'] names %(name)r but %(module)s is not installed: "
                    "pip install 'django-paycharge[%(name)s]'."
                )
                % {"name": name, "module": module.split(".")[0]}
            )
    return problems


def _webhook_token_messages(name: str) -> list[CheckMessage]:
    try:
        conf.raw_account_settings(name)
    except ConfigurationError:
        return []  # an unknown or malformed account: _account_messages reports it
    try:
        tokens = conf.webhook_auth_tokens(name)
    except ConfigurationError as exc:
        return [Error(exc.message, id=_id("E008"))]
    if not tokens.inherited:
        return []
    return [
        Warning(
            _(
                "PAYCHARGE['ACCOUNTS'][%(name)s] has no WEBHOOK_AUTH_TOKENS: its webhook URL "
                "accepts the default account's tokens (PAYCHARGE['WEBHOOK_AUTH_TOKENS']). "
                "This fallback is deprecated and will be removed: one account's token should "
                "not open another account's URL."
            )
            % {"name": repr(name)},
            hint=_(
                "Set PAYCHARGE['ACCOUNTS'][%(name)s]['WEBHOOK_AUTH_TOKENS'] to this account's "
                "own tokens ([] to accept only its synced webhook configurations' tokens)."
            )
            % {"name": repr(name)},
            id=_id("W004"),
        )
    ]


def _lease_messages() -> list[CheckMessage]:
    try:
        lease = conf.webhook_lease().total_seconds()
    except ConfigurationError as exc:
        return [Error(exc.message, id=_id("E008"))]
    try:
        account = conf.get_account()
    except ConfigurationError:
        return []  # reported above
    connect, read = account.timeout
    # One gateway request with every retry: a lease shorter than that can run out
    # under a live worker, and its delivery would be processed twice.
    longest = (connect + read) * (account.max_retries + 1) + account.backoff_max * (
        account.max_retries
    )
    if lease >= longest:
        return []
    return [
        Warning(
            _(
                "PAYCHARGE['WEBHOOK_LEASE_SECONDS'] (%(lease)d s) is shorter than one gateway "
                "request may take with its retries (%(longest)d s): a delivery still being "
                "processed could be taken over and processed twice."
            )
            % {"lease": lease, "longest": longest},
            hint=_("Raise WEBHOOK_LEASE_SECONDS, or lower TIMEOUT or MAX_RETRIES."),
            id=_id("W005"),
        )
    ]


# Below this many seconds of busy time-out, a burst of webhooks makes writers give up.
_SQLITE_MIN_TIMEOUT = 5


@register(Tags.compatibility)
def check_sqlite_busy_timeout(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W003: SQLite without a busy time-out and IMMEDIATE transactions fails concurrent writes.

    Webhook deliveries, task workers and the checkout write at the same time. A
    deferred transaction that reads and then writes fails at once with "database
    is locked" when another connection writes (its busy time-out does not apply
    to that upgrade); an IMMEDIATE one waits its turn, up to the time-out.
    """
    return sqlite_busy_timeout_messages(getattr(settings, "DATABASES", {}))


def sqlite_busy_timeout_messages(databases: Mapping[str, Any]) -> list[CheckMessage]:
    """The W003 warnings for ``databases`` (a ``DATABASES``-shaped mapping)."""
    messages: list[CheckMessage] = []
    for alias, database in databases.items():
        if not str(database.get("ENGINE", "")).endswith("sqlite3"):
            continue
        options = database.get("OPTIONS") or {}
        timeout = options.get("timeout")
        mode = str(options.get("transaction_mode") or "").upper()
        too_short = not isinstance(timeout, int | float) or timeout < _SQLITE_MIN_TIMEOUT
        if too_short or mode != "IMMEDIATE":
            messages.append(
                Warning(
                    _(
                        "Database %(alias)s is SQLite without a busy time-out and IMMEDIATE "
                        "transactions: concurrent writes (webhooks, workers, checkouts) can "
                        "fail with 'database is locked'."
                    )
                    % {"alias": repr(alias)},
                    hint=_(
                        "Set DATABASES[%(alias)s]['OPTIONS'] = {'timeout': 20, "
                        "'transaction_mode': 'IMMEDIATE', 'init_command': "
                        "'PRAGMA journal_mode=WAL;'} (see the installation guide)."
                    )
                    % {"alias": repr(alias)},
                    id=_id("W003"),
                )
            )
    return messages


@register(Tags.database, deploy=True)
def check_postgresql_connections(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W006: a PostgreSQL connection opened for every request costs more than a checkout's
    writes (its server process, authentication and catalog reads)."""
    return postgresql_connection_messages(getattr(settings, "DATABASES", {}))


def postgresql_connection_messages(databases: Mapping[str, Any]) -> list[CheckMessage]:
    """The W006 warnings for ``databases`` (a ``DATABASES``-shaped mapping)."""
    messages: list[CheckMessage] = []
    for alias, database in databases.items():
        if "postgresql" not in str(database.get("ENGINE", "")):
            continue
        pooled = bool((database.get("OPTIONS") or {}).get("pool"))
        if pooled or database.get("CONN_MAX_AGE", 0) != 0:
            continue
        messages.append(
            Warning(
                _(
                    "Database %(alias)s is PostgreSQL and opens a new connection for every "
                    "request (CONN_MAX_AGE is 0, no pool): each checkout pays for a connection "
                    "that costs the server more than the payment's own writes."
                )
                % {"alias": repr(alias)},
                hint=_(
                    "Set DATABASES[%(alias)s]['CONN_MAX_AGE'] = 60 with 'CONN_HEALTH_CHECKS': "
                    "True, or OPTIONS {'pool': True} with psycopg[pool] (see the deployment "
                    "guide)."
                )
                % {"alias": repr(alias)},
                id=_id("W006"),
            )
        )
    return messages


def _task_messages(user: Mapping[str, Any]) -> list[CheckMessage]:
    """Background work: a mode, backend alias or queue that could never run (E020)."""
    from .queue import MODES

    problems: list[str] = []
    mode = user.get("TASKS", conf.DEFAULTS["TASKS"])
    if mode not in MODES:
        problems.append(
            _("PAYCHARGE['TASKS'] is %(value)s; it must be one of %(modes)s.")
            % {"value": repr(mode), "modes": ", ".join(MODES)}
        )
    alias = user.get("TASK_BACKEND", conf.DEFAULTS["TASK_BACKEND"])
    queue = user.get("TASK_QUEUE", conf.DEFAULTS["TASK_QUEUE"])
    missing: list[CheckMessage] = []
    if not isinstance(alias, str) or not alias:
        problems.append(_("PAYCHARGE['TASK_BACKEND'] must be the alias of a backend in TASKS."))
    if not isinstance(queue, str) or not queue:
        problems.append(_("PAYCHARGE['TASK_QUEUE'] must be a non-empty queue name."))
    elif isinstance(alias, str) and alias:
        missing = _missing_backend_or_queue(alias, queue, user, mode)
        if not missing and alias in (getattr(settings, "TASKS", None) or {}) and mode != "inline":
            problems.extend(_binding_problems())
    problems.extend(_hook_problems("DELIVERY_HANDOFF", user.get("DELIVERY_HANDOFF")))
    sweep = user.get("SWEEP_AFTER", conf.DEFAULTS["SWEEP_AFTER"])
    if not isinstance(sweep, int | float) or isinstance(sweep, bool) or sweep < 0:
        problems.append(_("PAYCHARGE['SWEEP_AFTER'] must be a number of seconds, 0 or more."))
    days = user.get("DELIVERY_RETENTION_DAYS", conf.DEFAULTS["DELIVERY_RETENTION_DAYS"])
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        problems.append(_("PAYCHARGE['DELIVERY_RETENTION_DAYS'] must be an integer of at least 1."))
    return [
        *(Error(p, hint=_("See docs/deployment.md."), id=_id("E020")) for p in problems),
        *missing,
    ]


def _missing_backend_or_queue(
    alias: str, queue: str, user: Mapping[str, Any], mode: Any
) -> list[CheckMessage]:
    """E022: the backend or queue our tasks are sent to does not exist."""
    backends = getattr(settings, "TASKS", None) or {}
    hint = _("See docs/deployment.md, Background work and queues.")
    if alias not in backends:
        if "TASK_BACKEND" not in user and mode != "background":
            return []  # nothing named: work runs inline
        return [
            Error(
                _(
                    "PAYCHARGE['TASK_BACKEND'] is %(alias)s, but TASKS has no such backend "
                    "(%(known)s)."
                )
                % {"alias": repr(alias), "known": ", ".join(map(repr, backends)) or _("none")},
                hint=hint,
                id=_id("E022"),
            )
        ]
    entry = backends[alias]
    # As the tasks framework reads it: no QUEUES is ["default"], an empty list is any queue.
    queues = entry.get("QUEUES", ["default"]) if isinstance(entry, dict) else None
    if queues and queue not in queues:
        return [
            Error(
                _(
                    "PAYCHARGE['TASK_QUEUE'] is %(queue)s, but backend %(alias)s of TASKS has "
                    "no such queue (its QUEUES: %(known)s)."
                )
                % {
                    "queue": repr(queue),
                    "alias": repr(alias),
                    "known": ", ".join(map(repr, queues)),
                },
                hint=hint,
                id=_id("E022"),
            )
        ]
    return []


def _binding_problems() -> list[str]:
    """What the backend itself says when our tasks are bound to it (a queue it lacks, ...)."""
    from .queue import routed, tasks_framework
    from .tasks import ALL_TASKS

    if tasks_framework() is None:
        return [_("TASKS names a backend, but no tasks framework is installed (django-tasks).")]
    try:
        for task in ALL_TASKS:
            routed(task)
    except Exception as exc:  # the backend's own error names what is wrong
        return [
            _("Our tasks cannot run on PAYCHARGE['TASK_BACKEND'] / ['TASK_QUEUE']: %(error)s")
            % {"error": exc}
        ]
    return []


def _hook_problems(key: str, hook: Any) -> list[str]:
    """A hook setting: None, a callable, or the dotted path of an importable callable."""
    if hook is None or callable(hook):
        return []
    if isinstance(hook, str) and hook:
        try:
            if callable(import_string(hook)):
                return []
        except ImportError:
            pass
    return [
        _("PAYCHARGE['%(key)s'] must be the dotted path of a callable (got %(value)s).")
        % {"key": key, "value": repr(hook)}
    ]


def _known_keys() -> str:
    return _("Known keys: %(keys)s.") % {"keys": ", ".join(sorted(conf.DEFAULTS))}
