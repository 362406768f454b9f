from __future__ import annotations

import uuid

import pytest
from django.test import override_settings

from django_paycharge import conf
from django_paycharge.exceptions import ConfigurationError
from tests.settings import PAYCHARGE as BASE

OTHER_JWT = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJvdGhlciJ9.c2ln"


def test_default_account_reads_top_level_keys():
    account = conf.get_account()
    assert account.name == "default"
    assert account.base_url == BASE["BASE_URL"]
    assert account.secret == BASE["SECRET"]
    assert account.store_id == uuid.UUID(BASE["STORE_ID"])
    assert account.timeout == (5.0, 30.0)
    assert account.max_retries == 3


def test_settings_are_read_at_call_time():
    with override_settings(PAYCHARGE={**BASE, "TIMEOUT": 7, "MAX_RETRIES": 0}):
        account = conf.get_account()
        assert account.timeout == (7.0, 7.0)
        assert account.max_retries == 0
    assert conf.get_account().max_retries == 3


def test_an_account_is_checked_once_per_settings_and_a_bad_one_never_kept():
    assert conf.get_account() is conf.get_account(conf.DEFAULT_ACCOUNT)
    with override_settings(PAYCHARGE={**BASE, "MAX_RETRIES": 1}):
        assert conf.get_account().max_retries == 1
        with override_settings(PAYCHARGE={**BASE, "BASE_URL": "not a url"}):
            for _ in range(2):
                with pytest.raises(ConfigurationError):
                    conf.get_account()
        assert conf.get_account().max_retries == 1
    assert conf.get_account().max_retries == 3


def test_named_account_inherits_options_but_not_credentials():
    accounts = {"tokyo": {"SECRET": "s2", "JWT": OTHER_JWT, "STORE_ID": str(uuid.uuid4())}}
    with override_settings(PAYCHARGE={**BASE, "TIMEOUT": 9, "ACCOUNTS": accounts}):
        tokyo = conf.get_account("tokyo")
        assert tokyo.name == "tokyo"
        assert tokyo.secret == "s2"
        assert tokyo.timeout == (9.0, 9.0)
        assert tokyo.merchant_id is None  # not inherited from the default account
        assert conf.account_names() == ["default", "tokyo"]


def test_named_account_without_credentials_is_an_error_naming_the_key():
    accounts = {"osaka": {"STORE_ID": None}}
    expected = r"PAYCHARGE\['ACCOUNTS'\]\['osaka'\]\['SECRET'\]"
    with (
        override_settings(PAYCHARGE={**BASE, "ACCOUNTS": accounts}),
        pytest.raises(ConfigurationError, match=expected),
    ):
        conf.get_account("osaka")


def test_unknown_account_is_an_error_listing_the_configured_ones():
    with pytest.raises(ConfigurationError, match=r"No account named 'nope'.*default"):
        conf.get_account("nope")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("SECRET", "", r"\['SECRET'\] is not set"),
        # The client's own rule: requests would echo a bad header value in its errors.
        ("SECRET", "has space", r"\['SECRET'\] must not hold spaces"),
        ("BASE_URL", "https://gw.example/?x=1", r"\['BASE_URL'\] must be an absolute"),
        ("RETRY_BACKOFF", float("inf"), r"\['RETRY_BACKOFF'\]"),
        ("JWT", None, r"\['JWT'\] is not set"),
        ("JWT", "not-a-jwt", r"\['JWT'\] is not a JWT"),
        ("BASE_URL", "api.example.com", r"\['BASE_URL'\] must be an absolute"),
        ("STORE_ID", "store-1", r"\['STORE_ID'\] must be a UUID"),
        ("TIMEOUT", 0, r"\['TIMEOUT'\]"),
        ("TIMEOUT", (1, -1), r"\['TIMEOUT'\]"),
        ("MAX_RETRIES", True, r"\['MAX_RETRIES'\]"),
        ("MAX_RETRIES", 11, r"\['MAX_RETRIES'\]"),
    ],
)
def test_malformed_keys_raise_an_error_naming_the_key(key, value, message):
    with (
        override_settings(PAYCHARGE={**BASE, key: value}),
        pytest.raises(ConfigurationError, match=message),
    ):
        conf.get_account()


def test_account_repr_hides_credentials():
    text = repr(conf.get_account())
    assert BASE["SECRET"] not in text
    assert BASE["JWT"] not in text
    assert "fake-gateway" in text


def test_get_setting_returns_defaults_and_rejects_unknown_keys():
    assert conf.get_setting("WEBHOOK_AUTH_TOKENS") == []
    with override_settings(PAYCHARGE={**BASE, "WEBHOOK_AUTH_TOKENS": ["a"]}):
        assert conf.get_setting("WEBHOOK_AUTH_TOKENS") == ["a"]
    with pytest.raises(KeyError):
        conf.get_setting("NOPE")


def test_a_settings_cache_is_dropped_when_the_setting_changes():
    dropped: list[dict[str, int]] = []
    cache: conf.SettingsCache[str, int] = conf.SettingsCache(stale=dropped.append)
    cache.current()["a"] = 1
    assert cache.current() == {"a": 1}  # kept while PAYCHARGE stays
    before = conf.settings_generation()
    with override_settings(PAYCHARGE={**BASE}):
        assert conf.settings_generation() == before + 1
        assert cache.current() == {}
    assert conf.settings_generation() == before + 2  # entering and leaving
    assert dropped == [{"a": 1}]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (BASE["JWT"], True),
        ("a.b.c", False),
        ("eyJhIjoxfQ.eyJiIjoyfQ", False),
        ("eyJhIjoxfQ.eyJiIjoyfQ.", True),
        ("W10.W10.x", False),  # JSON arrays, not objects
    ],
)
def test_looks_like_jwt(value, expected):
    assert conf.looks_like_jwt(value) is expected


def test_a_settings_error_page_does_not_show_the_credentials(rf, settings):
    import sys

    from django.views.debug import ExceptionReporter

    settings.DEBUG = True
    settings.PAYCHARGE = {**BASE, "TIMEOUT": -1}
    try:
        conf.get_account()
    except ConfigurationError:
        html = ExceptionReporter(rf.get("/"), *sys.exc_info()).get_traceback_html()
    assert "TIMEOUT" in html
    assert BASE["SECRET"] not in html
    assert BASE["JWT"] not in html


def test_an_account_is_its_clients_options():
    from django_paycharge.client.options import ClientOptions

    account = conf.get_account()
    assert isinstance(account, ClientOptions)
    assert (account.pool_size, account.polling_timeout, account.max_retry_after) == (20, 60.0, 30.0)
    assert account.user_agent is None


def test_an_accounts_client_options_override_the_app_wide_ones():
    accounts = {
        "tokyo": {
            "SECRET": "s2",
            "JWT": OTHER_JWT,
            "POOL_SIZE": 4,
            "POLLING_TIMEOUT": 20,
            "MAX_RETRY_AFTER": 5,
        }
    }
    app_wide = {"POOL_SIZE": 50, "USER_AGENT": "shop/3.1", "ACCOUNTS": accounts}
    with override_settings(PAYCHARGE={**BASE, **app_wide}):
        tokyo = conf.get_account("tokyo")
        default = conf.get_account()
    assert (tokyo.pool_size, tokyo.polling_timeout, tokyo.max_retry_after) == (4, 20.0, 5.0)
    assert tokyo.user_agent == "shop/3.1"  # not set for tokyo: the app-wide value
    assert (default.pool_size, default.polling_timeout) == (50, 60.0)
    assert default.user_agent == "shop/3.1"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("POOL_SIZE", 0, r"\['POOL_SIZE'\] must be an integer from 1 to 1000"),
        ("POOL_SIZE", 2.5, r"\['POOL_SIZE'\]"),
        ("POLLING_TIMEOUT", 0, r"\['POLLING_TIMEOUT'\] must be a number of seconds from 1 to 300"),
        ("MAX_RETRY_AFTER", 3600, r"\['MAX_RETRY_AFTER'\]"),
        ("MAX_RETRY_AFTER", "30", r"\['MAX_RETRY_AFTER'\]"),
        ("USER_AGENT", "shop\n", r"\['USER_AGENT'\] must be one line"),
    ],
)
def test_malformed_client_options_raise_an_error_naming_the_key(key, value, message):
    accounts = {"osaka": {"SECRET": "s3", "JWT": OTHER_JWT, key: value}}
    with override_settings(PAYCHARGE={**BASE, "ACCOUNTS": accounts}):
        conf.get_account()  # the default account is fine
        with pytest.raises(ConfigurationError, match=r"\['ACCOUNTS'\]\['osaka'\]" + message):
            conf.get_account("osaka")
