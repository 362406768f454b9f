"""Charge hooks used by the tests through ``PAYCHARGE["API_CHARGE_HOOK"]``."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

ORDERS = {"A-1": (1500, "JPY"), "B-2": (990, "USD")}


def order_amount(request: Any, data: Any) -> dict[str, Any]:
    """The storefront pattern: the amount comes from the shop's own order."""
    if data["reference"] not in ORDERS:
        raise ValidationError({"reference": ["no such order"]})
    amount, currency = ORDERS[data["reference"]]
    return {"amount": amount, "currency": currency, "metadata": {"order": data["reference"]}}


def not_a_dict(request: Any, data: Any) -> Any:
    return [1500, "JPY"]


def no_currency(request: Any, data: Any) -> Any:
    return {"amount": 1500}


def bad_amount(request: Any, data: Any) -> Any:
    return {"amount": -1, "currency": "JPY"}
