"""Who hears an announcement: a signal's live receivers by name, their arguments as stored.

A receiver is known by its dotted name, so that a row can name the one it is for
and a later run, in any process, finds it again; its arguments are stored as
plain values and rows (by model and key), read afresh when it runs again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from asgiref.sync import async_to_sync
from django.apps import apps
from django.db import models
from django.dispatch import Signal
from django.utils.translation import gettext

Receivers = list[tuple[str, Callable[..., Any]]]


def receivers_of(signal: Signal, sender: Any) -> Receivers:
    """The receivers ``signal`` runs for ``sender`` now, each with its dotted name.

    Two receivers of one name (lambdas of one module) are told apart by
    their order: ``name#2``.
    """
    # Django lists a signal's live receivers (sender filter, dead weak
    # references dropped) only through this method; send_robust uses it too.
    sync, asynchronous = signal._live_receivers(sender)
    named: Receivers = []
    seen: Counter[str] = Counter()
    for receiver in [*sync, *(async_to_sync(r) for r in asynchronous)]:
        base = dotted_name(getattr(receiver, "awaitable", receiver))
        seen[base] += 1
        named.append((base if seen[base] == 1 else f"{base}#{seen[base]}", receiver))
    return named


def dotted_name(receiver: Any) -> str:
    module = getattr(receiver, "__module__", None)
    name = getattr(receiver, "__qualname__", None) or type(receiver).__qualname__
    return f"{module}.{name}"[:255] if module else str(name)[:255]


def encode(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The receiver's arguments as stored: plain values, and rows by model and key."""
    stored: dict[str, Any] = {}
    for key, value in kwargs.items():
        if isinstance(value, models.Model):
            stored[key] = {"model": value._meta.label_lower, "pk": value.pk}
        elif value is None or isinstance(value, str | int | float | bool):
            stored[key] = value
        else:
            raise TypeError(f"Announced argument {key!r} cannot be stored: {type(value)!r}")
    return stored


def decode_all(stored: list[Mapping[str, Any]], using: str) -> list[dict[str, Any] | Exception]:
    """Each of ``stored`` as a receiver's arguments, the rows they name read now from
    ``using`` (one query a model); a ``LookupError`` for one whose row is gone."""
    wanted: dict[str, set[Any]] = {}
    for arguments in stored:
        for value in arguments.values():
            if isinstance(value, dict):
                wanted.setdefault(value["model"], set()).add(value["pk"])
    found = {
        label: apps.get_model(label)._default_manager.using(using).in_bulk(list(pks))
        for label, pks in wanted.items()
    }
    return [_decoded(arguments, found) for arguments in stored]


def _decoded(
    stored: Mapping[str, Any], found: Mapping[str, Mapping[Any, Any]]
) -> dict[str, Any] | Exception:
    kwargs: dict[str, Any] = {}
    for key, value in stored.items():
        if isinstance(value, dict):
            row = found[value["model"]].get(value["pk"])
            if row is None:
                model = apps.get_model(value["model"])
                return LookupError(
                    gettext("The %(model)s %(pk)s announced no longer exists.")
                    % {"model": model._meta.verbose_name, "pk": value["pk"]}
                )
            value = row
        kwargs[key] = value
    return kwargs
