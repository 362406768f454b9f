"""One pooled client per configured account, built from settings on first use."""

from __future__ import annotations

import threading

from django.views.decorators.debug import sensitive_variables

from .. import conf, observe
from ..client import PayChargeClient
from ..exceptions import ConfigurationError
from . import problems

_lock = threading.Lock()
_clients: dict[str, PayChargeClient] = {}


@sensitive_variables()
def get_client(account: str | None = None) -> PayChargeClient:
    """The client of ``account`` (the default one when None). Rebuilt when ``PAYCHARGE`` changes."""
    name = account or conf.DEFAULT_ACCOUNT
    client = _clients.get(name)
    if client is not None:
        return client
    try:
        options = conf.get_account(name)  # an account is its client's options
    except ConfigurationError as exc:
        problems.record(name, problems.Kind.SETTINGS, detail=exc.message)
        raise
    with _lock:
        client = _clients.get(name)
        if client is None:
            # The account's metrics and traces, and the owner told of what is theirs to fix.
            observer = problems.watching(name, observe.gateway_observer(name))
            client = PayChargeClient.from_options(options, observer=observer)
            _clients[name] = client
    return client


@conf.on_settings_reset
def reset_clients() -> None:
    """Forget every client (they are rebuilt from the current settings on next use)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
