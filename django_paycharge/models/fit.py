"""Fit values read from the gateway into the mirror's columns, or store them as unknown.

The gateway may send a status longer than its column, an amount beyond 64
bits, a formatted amount with more digits than the column holds. Storing any
of them as is fails the whole write (PostgreSQL refuses them; SQLite would
keep text longer than the declared length and hide the difference). Such a
value is stored as NULL, which the admin, the API and the template tag show as
unknown; ``raw`` keeps it exactly as received.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import cache
from typing import Any

from django.db import models

_BIG_INT = 2**63

Fit = Callable[[Any], Any]


def _text(limit: int) -> Fit:
    def fit(value: Any) -> Any:
        return None if isinstance(value, str) and len(value) > limit else value

    return fit


def _integer(value: Any) -> Any:
    return None if isinstance(value, int) and not -_BIG_INT <= value < _BIG_INT else value


def _decimal(max_digits: int, places: int) -> Fit:
    whole_digits = max_digits - places

    def fit(value: Any) -> Any:
        if isinstance(value, Decimal) and value.adjusted() >= whole_digits:
            return None
        return value

    return fit


@cache
def column_fits(model: type[models.Model]) -> dict[str, Fit]:
    """For each column of ``model`` that can overflow, the function that fits a value to it."""
    fits: dict[str, Fit] = {}
    for field in model._meta.concrete_fields:
        if isinstance(field, models.CharField) and field.max_length:
            fits[field.attname] = _text(field.max_length)
        elif isinstance(field, models.BigIntegerField | models.IntegerField):
            fits[field.attname] = _integer
        elif isinstance(field, models.DecimalField):
            assert field.max_digits is not None and field.decimal_places is not None
            fits[field.attname] = _decimal(field.max_digits, field.decimal_places)
    return fits


def fit_row(model: type[models.Model], row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (column name -> value) with every value that does not fit its column as None."""
    fits = column_fits(model)
    for name, value in row.items():
        fit = fits.get(name)
        if fit is not None and value is not None:
            row[name] = fit(value)
    return row


def without_nul(value: Any) -> Any:
    """``value`` (text, or JSON of lists and dicts) with NUL characters as U+FFFD.

    PostgreSQL refuses NUL in text and JSON: one such value would fail its
    whole write on every sync. ``raw`` keeps everything else as received.
    """
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    return value
