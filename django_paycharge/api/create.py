"""The charge-create request: validated by the client's own rules (one source of truth).

The body mirrors the gateway's ``POST /charges`` body. Its rules are those of
:func:`django_paycharge.client._params.charge_create_body`; this module only
routes the JSON to it and turns its :class:`FieldError` list into a DRF
``ValidationError`` keyed by the spec's dotted field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..client._params import charge_create_body
from ..client.vocabulary import THREE_DS_MODES
from ..exceptions import FieldError, InvalidParametersError
from ..services.create import CREATE_ARGS

_TOP_LEVEL = (*CREATE_ARGS[:6], "metadata", "reference")
_NESTED = {
    "client_metadata": {"ip_address": "ip_address"},
    "redirect": {"endpoint": "redirect_endpoint"},
    "three_ds": {"redirect_endpoint": "three_ds_redirect_endpoint", "mode": "three_ds_mode"},
}
_DOTTED = {arg: f"{outer}.{inner}" for outer, m in _NESTED.items() for inner, arg in m.items()}
_MONEY = ("amount", "currency")
# Limits of the local mirror (not rules of the gateway): a value past them could
# be accepted remotely and then fail to be stored.
_MAX_STORED_INT = 2**63 - 1
_MAX_MERCHANT_TRANSACTION_ID = 255
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


class _ClientMetadata(serializers.Serializer[Any]):
    ip_address = serializers.IPAddressField(protocol="IPv4", required=False)


class _Redirect(serializers.Serializer[Any]):
    endpoint = _HttpUrlField()


class _ThreeDS(serializers.Serializer[Any]):
    redirect_endpoint = _HttpUrlField(required=False)
    mode = serializers.ChoiceField(choices=sorted(THREE_DS_MODES), required=False)


class ChargeCreateSerializer(serializers.Serializer[Any]):
    """A new charge. ``amount`` and ``currency`` only from callers allowed to set them.

    Context: ``direct_amount`` (the caller may set amount and currency) and
    ``hook_available`` (``PAYCHARGE["API_CHARGE_HOOK"]`` is set). The declared
    fields document the body for the schema; validation is the client's.
    """

    transaction_token_id = serializers.UUIDField(
        help_text="The transaction token made by the payment widget."
    )
    amount = serializers.IntegerField(
        min_value=1,
        max_value=_MAX_STORED_INT,
        required=False,
        help_text="Minor units. Only for callers allowed to set it (staff by default); "
        "otherwise the shop's charge hook sets it.",
    )
    currency = serializers.RegexField(
        r"^[A-Za-z]{3}$", required=False, help_text="ISO-4217, like amount."
    )
    capture = serializers.BooleanField(required=False)
    capture_at = serializers.DateTimeField(required=False, help_text="With a UTC offset.")
    merchant_transaction_id = serializers.CharField(
        required=False, max_length=_MAX_MERCHANT_TRANSACTION_ID
    )
    client_metadata = _ClientMetadata(required=False)
    metadata = _MetadataField(
        required=False, help_text="Flat: string, number, boolean or null values."
    )
    redirect = _Redirect(required=False)
    three_ds = _ThreeDS(required=False)
    reference = serializers.CharField(
        required=False,
        max_length=_MAX_REFERENCE,
        help_text="The shop's reference (e.g. an order id) for the charge hook; not sent.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """``create_charge`` keyword arguments plus ``reference``, or a ValidationError."""
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": [_("Send a JSON object.")]})
        args, errors = _route(data)
        reference = args.pop("reference")
        direct = bool(self.context.get("direct_amount"))
        hook = bool(self.context.get("hook_available"))
        sent = [f for f in _MONEY if args[f] is not None]
        if sent and not direct:
            errors += [FieldError(f, _("is set by the shop, not by this client")) for f in sent]
        # Money is checked here when the caller sets it, or must and no hook can.
        check_money = direct and (bool(sent) or not hook)
        try:
            charge_create_body(**args)
        except InvalidParametersError as exc:
            errors += [e for e in exc.errors if check_money or e.field not in _MONEY]
        errors += _storage_errors(args, reference)
        if errors:
            raise serializers.ValidationError(_by_field(errors))
        if not check_money:
            args["amount"] = args["currency"] = None
        return {**args, "reference": reference}


def _route(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
    """The body's values under ``create_charge``'s argument names; unknown fields refused."""
    args: dict[str, Any] = dict.fromkeys((*CREATE_ARGS, "reference"))
    errors: list[FieldError] = []
    for key, value in data.items():
        if key in _TOP_LEVEL:
            args[key] = value
        elif key in _NESTED:
            if value is None:
                continue
            if not isinstance(value, Mapping):
                errors.append(FieldError(key, _("must be a JSON object")))
                continue
            for inner, inner_value in value.items():
                if inner in _NESTED[key]:
                    args[_NESTED[key][inner]] = inner_value
                else:
                    errors.append(FieldError(f"{key}.{inner}", _("is not a known field")))
        else:
            errors.append(FieldError(str(key), _("is not a known field")))
    return args, errors


def _storage_errors(args: Mapping[str, Any], reference: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    amount = args["amount"]
    if isinstance(amount, int) and amount > _MAX_STORED_INT:
        errors.append(FieldError("amount", _("is too large")))
    mtid = args["merchant_transaction_id"]
    if isinstance(mtid, str) and len(mtid) > _MAX_MERCHANT_TRANSACTION_ID:
        errors.append(FieldError("merchant_transaction_id", _("is longer than 255 characters")))
    if reference is not None and (
        not isinstance(reference, str) or len(reference) > _MAX_REFERENCE
    ):
        errors.append(FieldError("reference", _("must be a string of at most 255 characters")))
    for name, value in args.items():
        if _has_nul(value):
            # PostgreSQL cannot store NUL in text or JSON.
            errors.append(FieldError(_DOTTED.get(name, name), _("must not contain NUL characters")))
    if _has_nul(reference):
        errors.append(FieldError("reference", _("must not contain NUL characters")))
    return errors


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


def _by_field(errors: list[FieldError]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for error in errors:
        found.setdefault(error.field or "non_field_errors", []).append(error.reason)
    return found
