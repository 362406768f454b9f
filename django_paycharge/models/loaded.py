"""Instances as reading them from the database would give them, built from values in hand.

A sync hands each receiver the charge it stored and records an announcement
per receiver: a page's hundred instances of each. ``Model.__init__`` sets
every field one by one and sends ``pre_init`` and ``post_init``, much of what
building them cost (docs/benchmarks.md, receivers).
:func:`loaded` gives the same instance (a model's own class, its fields as
attributes, its state as ``from_db`` leaves it) by filling its attributes at
once; it takes ``Model.from_db``'s path whenever that path could do more: a
receiver of ``pre_init`` or ``post_init`` for the model, or a field whose
attribute is a descriptor that sets (a file, a foreign key).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=Model)

_PLAIN: dict[type[Model], bool] = {}


def attnames(model: type[Model]) -> list[str]:
    """The attribute of each of ``model``'s columns, in field order (``from_db``'s order)."""
    return [field.attname for field in model._meta.concrete_fields]


def loaded(model: type[M], values: Mapping[str, Any], alias: str | None = None) -> M:
    """``model.from_db(alias, ...)`` of ``values``, one for each of :func:`attnames`; without
    ``alias``, the unsaved instance ``model(*values)`` would be (to be inserted)."""
    if not _plain(model) or pre_init.has_listeners(model) or post_init.has_listeners(model):
        names: Sequence[str] = attnames(model)
        if alias is None:
            return model(*(values[name] for name in names))
        return model.from_db(alias, names, [values[name] for name in names])
    instance = model.__new__(model)
    state = ModelState()
    if alias is not None:
        state.adding, state.db = False, alias
    instance.__dict__.update(values)
    instance._state = state
    return instance


def _plain(model: type[Model]) -> bool:
    """Whether every column's attribute is set as a plain attribute (no ``__set__``)."""
    plain = _PLAIN.get(model)
    if plain is None:
        plain = _PLAIN[model] = not any(
            hasattr(type(inspect.getattr_static(model, name, None)), "__set__")
            for name in attnames(model)
        )
    return plain
