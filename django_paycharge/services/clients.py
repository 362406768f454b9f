"""One pooled client per configured account, built from settings on first use."""

from __future__ import annotations

import threading

from django.views.decorators.debug import sensitive_variables

from .. import conf, observe
from ..client import PayChargeClient
from ..exceptions import ConfigurationError
from . import problems

_lock = threading.Lock()


def _close(clients: dict[str, PayChargeClient]) -> None:
    for client in clients.values():
        client.close()


# Dropped (and closed) on the first use after PAYCHARGE changed.
_clients: conf.SettingsCache[str, PayChargeClient] = conf.SettingsCache(stale=_close)


@sensitive_variables()
def get_client(account: str | None = None) -> PayChargeClient:
    """The client of ``account`` (the default one when None). Rebuilt when ``PAYCHARGE`` changes."""
    name = account or conf.DEFAULT_ACCOUNT
    client = _clients.current().get(name)
    if client is not None:
        return client
    try:
        options = conf.get_account(name)  # an account is its client's options
    except ConfigurationError as exc:
        problems.record(name, problems.Kind.SETTINGS, detail=exc.message)
        raise
    with _lock:
        clients = _clients.current()
        client = clients.get(name)
        if client is None:
            # The account's metrics and traces, and the owner told of what is theirs to fix.
            observer = problems.watching(name, observe.gateway_observer(name))
            client = PayChargeClient.from_options(options, observer=observer)
            clients[name] = client
    return client


def reset_clients() -> None:
    """Forget every client (they are rebuilt from the current settings on next use)."""
    with _lock:
        clients = _clients.current()
        _close(clients)
        clients.clear()
