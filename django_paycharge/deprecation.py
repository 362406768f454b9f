"""Public names removed since 0.1.0, still importable for a while.

Each use warns (:class:`DeprecationWarning`) and names what replaces it; the
CHANGELOG lists them under "Deprecated". :data:`MOVED` is the one table of
names that moved: each module that held one looks it up here from its
``__getattr__`` (hidden from type checkers, which should see only current
names). :data:`MOVED_MODULES` is the table of whole modules that moved: their
old paths have no file; :class:`OldPaths` (installed when the package is
imported) serves each as a module of warning aliases, and serves a module of
:data:`MOVED` whose file is gone the same way. No Django and no settings here:
the client's modules use it too.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

_P = "django_paycharge."
_VOCABULARY = _P + "client.vocabulary."

#: module -> {old name: its replacement's dotted path}
MOVED: dict[str, dict[str, str]] = {
    _P + "models": {
        "FINAL_STATUSES": _VOCABULARY + "FINAL_STATUSES",
        "status_rank": _VOCABULARY + "status_rank",
    },
    _P + "models.charges": {
        "FINAL_STATUSES": _VOCABULARY + "FINAL_STATUSES",
        "status_rank": _VOCABULARY + "status_rank",
    },
    _P + "client.lifecycle_types": {
        name: _VOCABULARY + name
        for name in (
            "REFUND_STATUSES",
            "CANCEL_STATUSES",
            "FINAL_OPERATION_STATUSES",
            "REFUND_REASONS",
            "REPORTED_REFUND_REASONS",
            "REFUND_EVENT",
            "CANCEL_EVENT",
            "NON_REFUNDABLE_PAYMENT_TYPES",
            "operation_rank",
        )
    },
    _P + "client.lifecycle": {
        "ChargeOperations": _P + "client.resources.charge_operations.ChargeOperations",
        "ThreeDSIssuerTokens": _P + "client.resources.charge_operations.ThreeDSIssuerTokens",
        "Refunds": _P + "client.resources.refunds_cancels.Refunds",
        "Cancels": _P + "client.resources.refunds_cancels.Cancels",
    },
    _P + "client.webhooks": {"Webhooks": _P + "client.resources.webhook_configs.Webhooks"},
    _P + "services.actions": {
        "recover_action_requests": _P + "services.recover_action_requests",
        "store_of": _P + "services.mirror.store_of",
    },
    _P + "services.three_ds": {
        "fetch_three_ds_issuer_token": _P + "services.fetch_three_ds_issuer_token",
    },
    _P + "services.charges": {
        "recover_charge_requests": _P + "services.recover_charge_requests",
        # the old module services.charges (store, refresh, wait), now the charges flow's package
        "refresh_charge": _P + "services.refresh_charge",
        "store_remote_charge": _P + "services.store_remote_charge",
        "wait_for_charge": _P + "services.wait_for_charge",
        "store_of": _P + "services.mirror.store_of",
        "transaction_token_payment_type": _P
        + "services.mirror.reads.transaction_token_payment_type",
        "WAIT_BACKOFF": _P + "services.mirror.reads.WAIT_BACKOFF",
    },
    _P + "services.sync": {"sync_windows": _P + "services.sync.run.sync_windows"},
    _P + "services.captures": {
        "cancel_charge": _P + "services.cancel_charge",
        "update_charge_metadata": _P + "services.update_charge_metadata",
    },
    _P + "admin.webhooks": {
        "WebhookDeliveryAdmin": _P + "admin.deliveries.WebhookDeliveryAdmin",
        "EventFilter": _P + "admin.deliveries.EventFilter",
    },
    _P + "admin.display": {"ERROR_CODES": _P + "charge_errors.ERROR_CODES"},
    _P + "admin.charge_lifecycle": {
        "ACTION_PERMISSIONS": _P + "admin.charge_page.ACTION_PERMISSIONS",
    },
}


#: old module path -> the module its every name moved to (the old path has no file)
MOVED_MODULES: dict[str, str] = {
    _P + "services." + old: _P + "services." + new
    for old, new in {
        "lifecycle_store": "mirror.lifecycle_store",
        "quarantine": "mirror.quarantined",
        "upsert": "mirror.upsert",
        "lifecycle_sync": "sync.children",
        "exactly_once": "lifecycle.exactly_once",
        "request_rows": "lifecycle.request_rows",
        "lifecycle_requests": "lifecycle.requests",
        "captures": "lifecycle.captures",
        "cancels": "lifecycle.cancels",
        "refunds": "lifecycle.refunds",
        "metadata_updates": "lifecycle.metadata_updates",
        "create": "charges.create",
        "outcomes": "charges.outcomes",
        "charge_requests": "charges.charge_requests",
        "payment_types": "charges.payment_types",
        "issuer_tokens": "charges.issuer_tokens",
        "instructions": "charges.instructions",
        "deliveries": "webhooks.deliveries",
        "webhook_configs": "webhooks.configs",
    }.items()
}


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (the caller's caller is blamed)."""
    warnings.warn(
        f"{old} is deprecated and will be removed; use {new} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def module_getattr(module: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module``: finds its names that moved (see :data:`MOVED`), warning.

    Any other name raises :class:`AttributeError`, as a module without one would.
    """
    names = MOVED.get(module, {})
    moved_to = MOVED_MODULES.get(module)

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is None and moved_to is not None and not name.startswith("__"):
            target = f"{moved_to}.{name}"
            if not hasattr(importlib.import_module(moved_to), name):
                target = None
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        deprecated(f"{module}.{name}", target)
        where, _, attribute = target.rpartition(".")
        return getattr(importlib.import_module(where), attribute)

    return __getattr__


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the old paths of moved modules, each as a module of warning aliases.

    Consulted after the path finders (appended to :data:`sys.meta_path`): a module
    that still has its file is imported as usual.
    """

    def find_spec(
        self, fullname: str, path: Any = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED_MODULES or fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED_MODULES.get(module.__name__, "its replacement")
        module.__doc__ = f"Deprecated: moved to {new}."
        module.__getattr__ = module_getattr(module.__name__)  # type: ignore[method-assign]


def install() -> None:
    """Serve the old module paths (once per process)."""
    if not any(isinstance(finder, OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(OldPaths())
