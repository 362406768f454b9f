from __future__ import annotations

import pytest
from django.test import override_settings

from django_paycharge.checks import check_paycharge_settings
from tests.settings import PAYCHARGE as BASE


def ids(messages):
    return sorted(m.id for m in messages)


def test_valid_settings_pass():
    assert check_paycharge_settings() == []


def test_missing_setting():
    with override_settings():
        from django.conf import settings

        del settings.PAYCHARGE
        assert ids(check_paycharge_settings()) == ["django_paycharge.E001"]


@pytest.mark.parametrize(
    ("change", "expected_id", "names"),
    [
        ({"SECRET": None}, "E001", "PAYCHARGE['SECRET']"),
        ({"JWT": ""}, "E001", "PAYCHARGE['JWT']"),
        ({"BASE_URL": "ftp://x"}, "E002", "PAYCHARGE['BASE_URL']"),
        ({"JWT": "abc"}, "E003", "PAYCHARGE['JWT']"),
        ({"BASE_URL": "http://api.example.com"}, "E004", "PAYCHARGE['BASE_URL']"),
        ({"STORE_ID": "x"}, "E005", "PAYCHARGE['STORE_ID']"),
        ({"TIMEOUT": "5"}, "E006", "PAYCHARGE['TIMEOUT']"),
        ({"POOL_SIZE": 0}, "E006", "PAYCHARGE['POOL_SIZE']"),
        ({"POLLING_TIMEOUT": None}, "E006", "PAYCHARGE['POLLING_TIMEOUT']"),
        ({"MAX_RETRY_AFTER": -1}, "E006", "PAYCHARGE['MAX_RETRY_AFTER']"),
        ({"USER_AGENT": "a\tb"}, "E006", "PAYCHARGE['USER_AGENT']"),
        ({"ACCOUNTS": []}, "E007", "PAYCHARGE['ACCOUNTS']"),
        ({"WEBHOOK_AUTH_TOKENS": "tok"}, "E008", "WEBHOOK_AUTH_TOKENS"),
        ({"SYNC_WINDOWS": 0}, "E008", "PAYCHARGE['SYNC_WINDOWS']"),
        ({"SYNC_WINDOWS": 65}, "E008", "PAYCHARGE['SYNC_WINDOWS']"),
        ({"ADMIN_SYNC_MAX_PAGES": "20"}, "E008", "PAYCHARGE['ADMIN_SYNC_MAX_PAGES']"),
        ({"SHOP_URL": ""}, "E008", "PAYCHARGE['SHOP_URL']"),
        ({"ORDER_URL_HOOK": "shop.nowhere.order_url"}, "E008", "PAYCHARGE['ORDER_URL_HOOK']"),
        ({"ORDER_URL_HOOK": 42}, "E008", "PAYCHARGE['ORDER_URL_HOOK']"),
        ({"SECERT": "x"}, "W001", "SECERT"),
        ({"CREATE_SETTLE_SECONDS": -1}, "E008", "CREATE_SETTLE_SECONDS"),
        ({"CHARGE_REQUEST_MAX_AGE": "900"}, "E008", "CHARGE_REQUEST_MAX_AGE"),
        ({"CHARGE_REQUEST_GRACE": True}, "E008", "CHARGE_REQUEST_GRACE"),
    ],
)
def test_each_problem_has_its_id_and_names_the_key(change, expected_id, names):
    with override_settings(PAYCHARGE={**BASE, **change}):
        messages = check_paycharge_settings()
    assert [m.id for m in messages] == [f"django_paycharge.{expected_id}"]
    assert names in messages[0].msg


def test_a_named_accounts_client_options_are_checked_as_its_own():
    own = {"SECRET": "s2", "JWT": BASE["JWT"] + "x", "POOL_SIZE": 5000, "USER_AGENT": "shop/1"}
    with override_settings(PAYCHARGE={**BASE, "ACCOUNTS": {"b": own}}):
        messages = check_paycharge_settings()
    problems = [(m.id, m.msg) for m in messages if m.id == "django_paycharge.E006"]
    assert len(problems) == 1 and "PAYCHARGE['ACCOUNTS']['b']['POOL_SIZE']" in problems[0][1]


def test_an_importable_or_callable_order_url_hook_passes():
    for hook in ("django_paycharge.access.session_owns_charge", lambda charge: None):
        with override_settings(PAYCHARGE={**BASE, "ORDER_URL_HOOK": hook}):
            assert check_paycharge_settings() == []


def test_plain_http_is_allowed_for_loopback_and_in_debug():
    with override_settings(PAYCHARGE={**BASE, "BASE_URL": "http://127.0.0.1:8001"}):
        assert check_paycharge_settings() == []
    with override_settings(DEBUG=True, PAYCHARGE={**BASE, "BASE_URL": "http://gw.example"}):
        assert check_paycharge_settings() == []


def test_named_accounts_are_checked():
    accounts = {"tokyo": {"JWT": BASE["JWT"]}}
    with override_settings(PAYCHARGE={**BASE, "ACCOUNTS": accounts}):
        messages = check_paycharge_settings()
    assert ids(messages) == ["django_paycharge.E001"]
    assert "PAYCHARGE['ACCOUNTS']['tokyo']['SECRET']" in messages[0].msg


def test_check_messages_never_contain_the_secret():
    with override_settings(PAYCHARGE={**BASE, "JWT": "bad", "BASE_URL": "nope"}):
        text = " ".join(f"{m.msg} {m.hint}" for m in check_paycharge_settings())
    assert BASE["SECRET"] not in text


def test_a_reporter_filter_that_shows_the_jwt_is_warned_about(settings):
    settings.DEFAULT_EXCEPTION_REPORTER_FILTER = "django.views.debug.SafeExceptionReporterFilter"
    assert ids(check_paycharge_settings()) == ["django_paycharge.W002"]


def test_the_apps_reporter_filter_hides_the_jwt_on_error_pages(settings, rf):
    from django.views.debug import get_exception_reporter_filter

    settings.DEBUG = True
    safe = get_exception_reporter_filter(rf.get("/")).get_safe_settings()
    assert BASE["JWT"] not in repr(safe)
    assert BASE["SECRET"] not in repr(safe)
    assert safe["PAYCHARGE"]["BASE_URL"] == BASE["BASE_URL"]


SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "shop.sqlite3"}


@pytest.mark.parametrize(
    ("options", "warned"),
    [
        ({}, True),  # Django's defaults: a new shop
        ({"timeout": 20}, True),
        ({"transaction_mode": "IMMEDIATE"}, True),
        ({"timeout": 1, "transaction_mode": "IMMEDIATE"}, True),
        ({"timeout": 20, "transaction_mode": "IMMEDIATE"}, False),
        ({"timeout": 20, "transaction_mode": "immediate", "init_command": "PRAGMA x"}, False),
    ],
)
def test_sqlite_without_a_busy_timeout_is_warned_about(options, warned):
    from django_paycharge.checks import sqlite_busy_timeout_messages

    databases = {
        "default": {**SQLITE, "OPTIONS": options},
        "pg": {"ENGINE": "django.db.backends.postgresql", "NAME": "x"},
    }
    messages = sqlite_busy_timeout_messages(databases)
    assert ids(messages) == (["django_paycharge.W003"] if warned else [])
    if warned:
        assert "'default'" in messages[0].msg and "'timeout': 20" in str(messages[0].hint)


PG = {"ENGINE": "django.db.backends.postgresql", "NAME": "shop"}


@pytest.mark.parametrize(
    ("database", "warned"),
    [
        (PG, True),  # Django's default: a new connection every request
        ({**PG, "CONN_MAX_AGE": 0}, True),
        ({**PG, "CONN_MAX_AGE": 60, "CONN_HEALTH_CHECKS": True}, False),
        ({**PG, "CONN_MAX_AGE": None}, False),  # kept for ever
        ({**PG, "OPTIONS": {"pool": True}}, False),
        ({**PG, "OPTIONS": {"pool": {"min_size": 2}}}, False),
        (SQLITE, False),
    ],
)
def test_postgresql_without_kept_connections_is_warned_about_at_deploy(database, warned):
    from django_paycharge.checks import postgresql_connection_messages

    messages = postgresql_connection_messages({"default": database})
    assert ids(messages) == (["django_paycharge.W006"] if warned else [])
    if warned:
        assert "'default'" in messages[0].msg and "CONN_MAX_AGE" in str(messages[0].hint)


def test_the_connection_check_runs_only_with_deploy():
    from django.core.checks.registry import registry

    from django_paycharge.checks import check_postgresql_connections

    assert check_postgresql_connections in registry.get_checks(include_deployment_checks=True)
    assert check_postgresql_connections not in registry.get_checks()


def test_the_seconds_settings_are_validated_when_read(settings):
    from django_paycharge import conf
    from django_paycharge.exceptions import ConfigurationError

    settings.PAYCHARGE = {**BASE, "CHARGE_REQUEST_MAX_AGE": 0}
    with pytest.raises(ConfigurationError, match="CHARGE_REQUEST_MAX_AGE"):
        conf.get_seconds("CHARGE_REQUEST_MAX_AGE")
    settings.PAYCHARGE = BASE
    assert conf.get_seconds("CHARGE_REQUEST_MAX_AGE") == 900.0


def test_the_sqlite_check_runs_on_the_projects_databases(settings):
    from django_paycharge.checks import check_sqlite_busy_timeout

    # The suite's own SQLite settings are the ones the docs give: no warning.
    assert check_sqlite_busy_timeout() == []
