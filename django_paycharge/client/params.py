"""What the client sends, validated before sending: a new charge's parameters, list queries.

:class:`ChargeCreateParams` is the one definition of a charge's creation
parameters: the client sends it, the services store and resend it, the DRF
endpoint reads a request body into it, and the OpenAPI schema is built from
its fields. Each field says where it goes in the gateway's JSON body and which
rule checks it; :meth:`ChargeCreateParams.to_body` applies every rule and
raises one :class:`~django_paycharge.exceptions.InvalidParametersError`
naming each broken field.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping
from dataclasses import field
from datetime import datetime
from typing import Any

from ..exceptions import FieldError
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

Validator = Callable[[Any, str], Any]


def rule(validate: Validator, wire: str = "") -> dict[str, Any]:
    """A field's metadata: ``validate`` checks it, ``wire`` is its dotted path in the JSON
    body (its own name when empty)."""
    return {"validate": validate, "wire": wire}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChargeCreateParams:
    """The parameters of a new charge (``POST /charges``); ``None`` means "not sent".

    Building one checks nothing: :meth:`to_body` does, so every broken field
    is named at once. ``amount`` is a positive integer in the currency's
    smallest unit; ``currency`` is upper-cased; ``capture_at`` is an aware
    ``datetime`` or ISO-8601 text with an offset; ``ip_address`` is the
    customer's IPv4 address; ``three_ds_mode="skip"`` needs the app token's
    secret, which the client always sends.
    """

    transaction_token_id: uuid.UUID | str = field(metadata=rule(validate_uuid))
    amount: int = field(metadata=rule(validate_amount))
    currency: str = field(metadata=rule(validate_currency))
    capture: bool | None = field(metadata=rule(validate_bool), default=None)
    capture_at: datetime | str | None = field(metadata=rule(validate_aware_datetime), default=None)
    merchant_transaction_id: str | None = field(
        metadata=rule(validate_merchant_transaction_id), default=None
    )
    ip_address: str | None = field(
        metadata=rule(validate_ipv4, "client_metadata.ip_address"), default=None
    )
    metadata: Mapping[str, Any] | None = field(metadata=rule(validate_metadata), default=None)
    redirect_endpoint: str | None = field(
        metadata=rule(validate_http_url, "redirect.endpoint"), default=None
    )
    three_ds_redirect_endpoint: str | None = field(
        metadata=rule(validate_http_url, "three_ds.redirect_endpoint"), default=None
    )
    three_ds_mode: str | None = field(
        metadata=rule(validate_three_ds_mode, "three_ds.mode"), default=None
    )

    @classmethod
    def given(
        cls, params: ChargeCreateParams | None, fields: Mapping[str, Any]
    ) -> ChargeCreateParams:
        """``params``, or the params made of ``fields`` (keyword arguments of a caller that
        takes either); an unknown or missing field raises :class:`TypeError`, as in a call."""
        if params is None:
            return cls(**fields)
        if fields:
            raise TypeError(
                "Pass a ChargeCreateParams or its fields as keyword arguments, not both."
            )
        if not isinstance(params, cls):
            raise TypeError(f"Expected a ChargeCreateParams, not {type(params).__name__}.")
        return params

    def to_body(self, checker: Checker | None = None) -> dict[str, Any]:
        """The JSON body of ``POST /charges``, ``None`` fields left out, every rule applied.

        Errors go to ``checker`` (a fresh one when not given), and one
        :class:`~django_paycharge.exceptions.InvalidParametersError` listing
        all of them is raised.
        """
        c = checker or Checker()
        body = fields_body(self, REQUIRED_CREATE_FIELDS, c)
        c.raise_if_any()
        return body

    def to_dict(self) -> dict[str, Any]:
        """The fields given (``None`` left out): ``ChargeCreateParams(**params.to_dict())``."""
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {name: value for name, value in given.items() if value is not None}

    @classmethod
    def fields_from_body(
        cls, body: Mapping[str, Any], *, extra: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any], list[FieldError]]:
        """A JSON body shaped like the gateway's, read back into field values (``None`` when
        absent), and an error for each key that is not a field. Top-level keys in ``extra``
        are kept under their own name. Nothing is validated: :meth:`to_body` does that."""
        values: dict[str, Any] = dict.fromkeys((*CREATE_FIELDS, *extra))
        errors: list[FieldError] = []
        for key, value in body.items():
            if key in _TOP_LEVEL or key in extra:
                values[_TOP_LEVEL.get(key, key)] = value
            elif key in _NESTED:
                if value is None:
                    continue
                if not isinstance(value, Mapping):
                    errors.append(FieldError(key, "must be a JSON object"))
                    continue
                for inner, inner_value in value.items():
                    name = _NESTED[key].get(inner)
                    if name is None:
                        errors.append(FieldError(f"{key}.{inner}", "is not a known field"))
                    else:
                        values[name] = inner_value
            else:
                errors.append(FieldError(str(key), "is not a known field"))
        return values, errors


def fields_body(params: Any, required: frozenset[str], checker: Checker) -> dict[str, Any]:
    """The JSON body of a parameters dataclass whose fields carry :func:`rule` metadata:
    ``None`` fields left out (unless ``required``), each value checked by its rule and put at
    its dotted ``wire`` path. Errors go to ``checker``; the caller raises them."""
    body: dict[str, Any] = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if value is None and f.name not in required:
            continue
        path = f.metadata["wire"] or f.name
        checked = checker.check(f.metadata["validate"], value, path)
        *outer, inner = path.split(".")
        target = body
        for key in outer:
            target = target.setdefault(key, {})
        target[inner] = checked
    return body


def fields_from_wire(cls: Any, body: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`fields_body`: the field values of the parameters dataclass
    ``cls`` read from a JSON body at their ``wire`` paths (``None`` when absent or when an
    enclosing object is not one). Nothing is checked; unknown keys are ignored."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        *outer, inner = (f.metadata["wire"] or f.name).split(".")
        node: Any = body
        for key in outer:
            node = node.get(key) if isinstance(node, Mapping) else None
        values[f.name] = node.get(inner) if isinstance(node, Mapping) else None
    return values


def wire_name(name: str) -> str:
    """The dotted path in the gateway's JSON of the :class:`ChargeCreateParams` field ``name``
    (``"ip_address"`` -> ``"client_metadata.ip_address"``), the name of its errors."""
    return _WIRE[name]


#: The fields of :class:`ChargeCreateParams`, in the body's order.
CREATE_FIELDS = tuple(f.name for f in dataclasses.fields(ChargeCreateParams))
#: The fields without which the gateway refuses a charge.
REQUIRED_CREATE_FIELDS = frozenset(
    f.name for f in dataclasses.fields(ChargeCreateParams) if f.default is dataclasses.MISSING
)
_WIRE = {f.name: f.metadata["wire"] or f.name for f in dataclasses.fields(ChargeCreateParams)}


def _nested() -> dict[str, dict[str, str]]:
    """``{"three_ds": {"mode": "three_ds_mode", ...}, ...}``: the fields inside each object."""
    nested: dict[str, dict[str, str]] = {}
    for name, path in _WIRE.items():
        outer, _dot, inner = path.partition(".")
        if inner:
            nested.setdefault(outer, {})[inner] = name
    return nested


#: Top-level body keys -> field names, and nested objects' keys -> field names.
_TOP_LEVEL = {path: name for name, path in _WIRE.items() if "." not in path}
_NESTED = _nested()


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
