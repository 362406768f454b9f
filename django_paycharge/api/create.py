"""The charge-create request: the gateway's ``POST /charges`` body, read into the client's type.

The body's shape, its fields and their rules are those of
:class:`django_paycharge.client.params.ChargeCreateParams` (one source of
truth), and what the mirror cannot store is refused by
:func:`django_paycharge.services.charges.storage_errors`. This module routes
the JSON to them, turns their :class:`FieldError` list into a DRF
``ValidationError`` keyed by the spec's dotted field names, and describes the
body for the OpenAPI schema.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..client.params import CREATE_FIELDS, ChargeCreateParams, wire_name
from ..client.vocabulary import THREE_DS_MODES
from ..exceptions import FieldError, InvalidParametersError
from ..services.charges import MAX_MERCHANT_TRANSACTION_ID, MAX_STORED_INT, has_nul, storage_errors

_MONEY = ("amount", "currency")
#: The shop's own field: handed to the charge hook, never sent to the gateway.
_REFERENCE = "reference"
_MAX_REFERENCE = 255


# Schema-only field types: they describe the rules for client generators and fuzzers;
# validation itself stays the client's (see ChargeCreateSerializer.to_internal_value).
@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "nullable": True,
            "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
        },
    }
)
class _MetadataField(serializers.DictField):
    pass


@extend_schema_field({"type": "string", "format": "uri", "pattern": "^https?://"})
class _HttpUrlField(serializers.URLField):
    pass


#: How the schema describes each field of ChargeCreateParams (by its name there).
_SCHEMA: dict[str, Callable[[], serializers.Field[Any, Any, Any, Any]]] = {
    "transaction_token_id": lambda: serializers.UUIDField(
        help_text="The transaction token made by the payment widget."
    ),
    "amount": lambda: serializers.IntegerField(
        min_value=1,
        max_value=MAX_STORED_INT,
        required=False,
        help_text="Minor units. Only for callers allowed to set it (staff by default); "
        "otherwise the shop's charge hook sets it.",
    ),
    "currency": lambda: serializers.RegexField(
        r"^[A-Za-z]{3}$", required=False, help_text="ISO-4217, like amount."
    ),
    "capture": lambda: serializers.BooleanField(required=False),
    "capture_at": lambda: serializers.DateTimeField(required=False, help_text="With a UTC offset."),
    "merchant_transaction_id": lambda: serializers.CharField(
        required=False, max_length=MAX_MERCHANT_TRANSACTION_ID
    ),
    "ip_address": lambda: serializers.IPAddressField(protocol="IPv4", required=False),
    "metadata": lambda: _MetadataField(
        required=False, help_text="Flat: string, number, boolean or null values."
    ),
    "redirect_endpoint": lambda: _HttpUrlField(),
    "three_ds_redirect_endpoint": lambda: _HttpUrlField(required=False),
    "three_ds_mode": lambda: serializers.ChoiceField(
        choices=sorted(THREE_DS_MODES), required=False
    ),
}
# The reasons ChargeCreateParams.fields_from_body gives (the client has no translations).
_REASONS = {
    "must be a JSON object": gettext_lazy("must be a JSON object"),
    "is not a known field": gettext_lazy("is not a known field"),
}


def _group(outer: str, fields: dict[str, Any]) -> serializers.Serializer[Any]:
    """The schema of a nested object of the body (``client_metadata``, ``three_ds``...)."""
    name = "ChargeCreate" + "".join(part.capitalize() for part in outer.split("_"))
    group: type[serializers.Serializer[Any]] = type(name, (serializers.Serializer,), fields)
    return group(required=False)


def _body_fields() -> dict[str, Any]:
    """The body's fields in the gateway's shape, as ChargeCreateParams places them."""
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for name in CREATE_FIELDS:
        outer, _dot, inner = wire_name(name).rpartition(".")
        if outer:
            nested.setdefault(outer, {})[inner] = _SCHEMA[name]()
            top.setdefault(outer, None)  # keeps the body's order
        else:
            top[inner] = _SCHEMA[name]()
    for outer, fields in nested.items():
        top[outer] = _group(outer, fields)
    top[_REFERENCE] = serializers.CharField(
        required=False,
        max_length=_MAX_REFERENCE,
        help_text="The shop's reference (e.g. an order id) for the charge hook; not sent.",
    )
    return top


_BODY_FIELDS = _body_fields()  # built once: drf-spectacular names each nested class once


class ChargeCreateSerializer(serializers.Serializer[Any]):
    """A new charge. ``amount`` and ``currency`` only from callers allowed to set them.

    Context: ``direct_amount`` (the caller may set amount and currency) and
    ``hook_available`` (``PAYCHARGE["API_CHARGE_HOOK"]`` is set). The fields
    document the body for the schema; validation is the client's.
    """

    def get_fields(self) -> dict[str, Any]:
        # DRF binds a field to one serializer: each serializer gets copies, as for declared ones.
        return copy.deepcopy(_BODY_FIELDS)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """``create_charge`` keyword arguments plus ``reference``, or a ValidationError."""
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": [_("Send a JSON object.")]})
        args, errors = ChargeCreateParams.fields_from_body(data, extra=(_REFERENCE,))
        errors = [FieldError(e.field, str(_REASONS.get(e.reason, e.reason))) for e in errors]
        reference = args.pop(_REFERENCE)
        direct = bool(self.context.get("direct_amount"))
        hook = bool(self.context.get("hook_available"))
        sent = [f for f in _MONEY if args[f] is not None]
        if sent and not direct:
            errors += [FieldError(f, _("is set by the shop, not by this client")) for f in sent]
        # Money is checked here when the caller sets it, or must and no hook can.
        check_money = direct and (bool(sent) or not hook)
        params = ChargeCreateParams(**args)
        try:
            params.to_body()
        except InvalidParametersError as exc:
            errors += [e for e in exc.errors if check_money or e.field not in _MONEY]
        errors += storage_errors(params) + _reference_errors(reference)
        if errors:
            raise serializers.ValidationError(_by_field(errors))
        if not check_money:
            args["amount"] = args["currency"] = None
        return {**args, _REFERENCE: reference}


def _reference_errors(reference: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    if reference is not None and (
        not isinstance(reference, str) or len(reference) > _MAX_REFERENCE
    ):
        errors.append(FieldError(_REFERENCE, _("must be a string of at most 255 characters")))
    if has_nul(reference):
        errors.append(FieldError(_REFERENCE, _("must not contain NUL characters")))
    return errors


def _by_field(errors: list[FieldError]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for error in errors:
        found.setdefault(error.field or "non_field_errors", []).append(error.reason)
    return found
