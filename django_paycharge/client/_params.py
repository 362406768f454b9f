"""Build request bodies and query strings from Python arguments, validating them first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .validation import (
    Checker,
    invalid,
    validate_amount,
    validate_aware_datetime,
    validate_bool,
    validate_currency,
    validate_cursor_direction,
    validate_http_url,
    validate_ipv4,
    validate_limit,
    validate_merchant_transaction_id,
    validate_metadata,
    validate_non_negative_int,
    validate_query_value,
    validate_three_ds_mode,
    validate_uuid,
)


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise invalid(field, "must be a non-empty string")
    return value


#: Validators of the charge list filters named in the gateway facts; any other
#: filter goes through :func:`validate_query_value`, since the live gateway may
#: know filters this list does not.
CHARGE_FILTERS: dict[str, Callable[[Any, str], str | int]] = {
    "from": validate_aware_datetime,
    "to": validate_aware_datetime,
    "amount_from": validate_non_negative_int,
    "amount_to": validate_non_negative_int,
    "currency": validate_currency,
    "mode": _text,
    "transaction_token_id": validate_uuid,
    "metadata": _text,
}


def charge_create_body(
    *,
    checker: Checker | None = None,
    transaction_token_id: Any,
    amount: Any,
    currency: Any,
    capture: Any,
    capture_at: Any,
    merchant_transaction_id: Any,
    ip_address: Any,
    metadata: Any,
    redirect_endpoint: Any,
    three_ds_redirect_endpoint: Any,
    three_ds_mode: Any,
) -> dict[str, Any]:
    """The JSON body of ``POST /charges``, ``None`` arguments left out.

    Errors go to ``checker`` (a fresh one when not given), and one
    :class:`InvalidParametersError` listing all of them is raised.
    """
    c = checker or Checker()
    token_id = c.check(validate_uuid, transaction_token_id, "transaction_token_id")
    body: dict[str, Any] = {
        "transaction_token_id": token_id,
        "amount": c.check(validate_amount, amount, "amount"),
        "currency": c.check(validate_currency, currency, "currency"),
    }
    if capture is not None:
        body["capture"] = c.check(validate_bool, capture, "capture")
    if capture_at is not None:
        body["capture_at"] = c.check(validate_aware_datetime, capture_at, "capture_at")
    if merchant_transaction_id is not None:
        body["merchant_transaction_id"] = c.check(
            validate_merchant_transaction_id, merchant_transaction_id, "merchant_transaction_id"
        )
    if ip_address is not None:
        body["client_metadata"] = {
            "ip_address": c.check(validate_ipv4, ip_address, "client_metadata.ip_address")
        }
    if metadata is not None:
        body["metadata"] = c.check(validate_metadata, metadata, "metadata")
    if redirect_endpoint is not None:
        body["redirect"] = {
            "endpoint": c.check(validate_http_url, redirect_endpoint, "redirect.endpoint")
        }
    three_ds: dict[str, Any] = {}
    if three_ds_redirect_endpoint is not None:
        three_ds["redirect_endpoint"] = c.check(
            validate_http_url, three_ds_redirect_endpoint, "three_ds.redirect_endpoint"
        )
    if three_ds_mode is not None:
        three_ds["mode"] = c.check(validate_three_ds_mode, three_ds_mode, "three_ds.mode")
    if three_ds:
        body["three_ds"] = three_ds
    c.raise_if_any()
    return body


def list_params(
    *,
    limit: Any,
    cursor: Any,
    cursor_direction: Any,
    filters: Mapping[str, Any],
    known_filters: Mapping[str, Callable[[Any, str], str | int]] | None = None,
    checker: Checker | None = None,
) -> dict[str, str]:
    """The query string of a list: pagination plus filters, ``None`` values left out.

    ``from_`` stands for ``from`` (a Python keyword); giving both is an error.
    """
    c = checker or Checker()
    params: dict[str, Any] = {}
    if limit is not None:
        params["limit"] = c.check(validate_limit, limit, "limit")
    if cursor is not None:
        params["cursor"] = c.check(validate_uuid, cursor, "cursor")
    if cursor_direction is not None:
        params["cursor_direction"] = c.check(
            validate_cursor_direction, cursor_direction, "cursor_direction"
        )
    if "from_" in filters and "from" in filters:
        c.fail("from", "give either from_ or from, not both")
    known = known_filters or {}
    for key, value in filters.items():
        name = "from" if key == "from_" else key
        if value is None:
            continue
        params[name] = c.check(known.get(name, validate_query_value), value, name)
    c.raise_if_any()
    return {k: str(v) for k, v in params.items()}
