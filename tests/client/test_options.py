"""One options type: the client's signature, an account's keys and the defaults all follow it."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields
from typing import Any

import pytest
import responses

from django_paycharge import conf
from django_paycharge.client import PayChargeClient
from django_paycharge.client.options import OPTION_NAMES, ClientOptions
from django_paycharge.exceptions import InvalidParametersError

from .conftest import BASE, CHARGE, JWT, SECRET, STORE, charge_json


def _defaults() -> dict[str, Any]:
    return {f.name: f.default for f in fields(ClientOptions) if f.default is not MISSING}


def test_every_option_is_an_account_key() -> None:
    assert sorted(conf.CLIENT_OPTIONS.values()) == sorted(OPTION_NAMES)
    assert set(conf.CLIENT_OPTIONS) <= set(conf.ACCOUNT_KEYS)


def test_the_client_and_the_settings_default_to_the_options_defaults() -> None:
    signature = inspect.signature(PayChargeClient.__init__).parameters
    for name, default in _defaults().items():
        assert signature[name].default == default, name
    setting = {option: key for key, option in conf.CLIENT_OPTIONS.items()}
    for name, default in _defaults().items():
        assert conf.DEFAULTS[setting[name]] == default, setting[name]


@pytest.mark.parametrize("agent", ["shop\r\nX-Injected: 1", "", "ショップ", 3])
def test_a_user_agent_must_be_one_line_of_ascii(agent: Any) -> None:
    with pytest.raises(InvalidParametersError) as info:
        PayChargeClient(base_url=BASE, secret=SECRET, jwt=JWT, user_agent=agent)
    assert [e.field for e in info.value.errors] == ["user_agent"]


def test_a_client_built_from_options_uses_every_one(rsps: responses.RequestsMock) -> None:
    options = ClientOptions.checked(
        base_url=BASE,
        secret=SECRET,
        jwt=JWT,
        timeout=(2.0, 7.0),
        polling_timeout=45.0,
        pool_size=3,
        user_agent="shop/2.0",
    )
    client = PayChargeClient.from_options(options)
    rsps.get(f"{BASE}/stores/{STORE}/charges/{CHARGE}", json=charge_json())
    client.charges.retrieve(STORE, CHARGE, polling=True)
    sent = rsps.calls[0].request
    assert sent.headers["User-Agent"] == "shop/2.0"
    assert sent.req_kwargs["timeout"] == (2.0, 45.0)  # type: ignore[attr-defined]  # set by responses
    adapter = client.session.get_adapter(f"{BASE}/charges")
    assert adapter._pool_maxsize == 3  # type: ignore[attr-defined]
    client.close()


def test_values_round_trip_through_checked() -> None:
    options = ClientOptions.checked(base_url=BASE, secret=SECRET, jwt=JWT, max_retry_after=5)
    assert ClientOptions.checked(**options.values()) == options
