"""One pooled client per configured account, built from settings on first use."""

from __future__ import annotations

import threading

from django.views.decorators.debug import sensitive_variables

from .. import conf, observe
from ..client import PayChargeClient

_lock = threading.Lock()
_clients: dict[str, PayChargeClient] = {}


@sensitive_variables()
def get_client(account: str | None = None) -> PayChargeClient:
    """The client of ``account`` (the default one when None). Rebuilt when ``PAYCHARGE`` changes."""
    name = account or conf.DEFAULT_ACCOUNT
    client = _clients.get(name)
    if client is not None:
        return client
    options = conf.get_account(name)  # an account is its client's options
    with _lock:
        client = _clients.get(name)
        if client is None:
            client = PayChargeClient.from_options(options, observer=observe.gateway_observer(name))
            _clients[name] = client
    return client


@conf.on_settings_reset
def reset_clients() -> None:
    """Forget every client (they are rebuilt from the current settings on next use)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
