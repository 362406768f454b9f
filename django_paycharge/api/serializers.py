"""What the API renders: charges, issuer tokens, webhook configurations, errors.

Ids are the gateway's ids. ``raw`` payloads are never rendered, nor a webhook's
auth token digest; full bank account numbers only to staff holding
``django_paycharge.view_bank_account_number``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from ..client.vocabulary import CHARGE_FIELDS
from ..models import Charge, IssuerToken, PaymentType, WebhookConfiguration
from ..models.charges import mask_account_number
from .permissions import is_staff, may_see_account_number

#: Merchant-side details a customer has no business seeing.
STAFF_ONLY_CHARGE_FIELDS = ("account", "fee_amount", "fee_currency", "fee_amount_formatted")


def _user(serializer: serializers.BaseSerializer[Any]) -> Any:
    request = serializer.context.get("request")
    return getattr(request, "user", None)


class ChargeSerializer(serializers.ModelSerializer[Charge]):
    """A charge of the local mirror. ``account`` and ``fee_*`` are null for non-staff."""

    id = serializers.UUIDField(source="gateway_id", read_only=True)
    account = serializers.CharField(read_only=True, allow_null=True)
    payment_type = serializers.ChoiceField(
        choices=PaymentType.choices,
        allow_blank=True,
        read_only=True,
        help_text="The transaction token's; empty until it is read (a new charge's, after "
        "the answer; a synced one's, by the periodic fill).",
    )
    refunded_amount = serializers.IntegerField(
        read_only=True, help_text="Successful refunds, in the charged currency's smallest unit."
    )

    class Meta:
        model = Charge
        # The gateway's fields, then what the mirror adds.
        fields = (
            "id",
            *CHARGE_FIELDS,
            "payment_type",
            "account",
            "refunded_amount",
            "synced_at",
        )
        read_only_fields = fields

    def to_representation(self, instance: Charge) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        if not is_staff(_user(self)):
            for name in STAFF_ONLY_CHARGE_FIELDS:
                data[name] = None
        return data


class ChargePageSerializer(serializers.Serializer[Any]):
    """A page of charges, shaped like the gateway's lists."""

    items = ChargeSerializer(many=True)
    has_more = serializers.BooleanField()


_BANK_FIELDS = ("account_id", "branch_code", "branch_name", "account_holder_name")


class IssuerTokenSerializer(serializers.ModelSerializer[IssuerToken]):
    """An issuer token: online fields or bank fields (the others are null).

    ``account_number`` is masked (``•••4567``) unless the user is staff with
    ``django_paycharge.view_bank_account_number``; ``account_number_masked`` says which.
    """

    charge_id = serializers.UUIDField(source="charge.gateway_id", read_only=True)
    call_method = serializers.CharField(allow_null=True, read_only=True)
    issuer_token = serializers.CharField(allow_null=True, read_only=True)
    account_id = serializers.CharField(allow_null=True, read_only=True)
    branch_code = serializers.CharField(allow_null=True, read_only=True)
    branch_name = serializers.CharField(allow_null=True, read_only=True)
    account_holder_name = serializers.CharField(allow_null=True, read_only=True)
    account_number = serializers.SerializerMethodField()
    account_number_masked = serializers.SerializerMethodField()

    class Meta:
        model = IssuerToken
        fields = (
            "charge_id",
            "payment_type",
            "call_method",
            "issuer_token",
            "payload",
            *_BANK_FIELDS,
            "account_number",
            "account_number_masked",
            "fetched_at",
        )
        read_only_fields = fields

    def get_account_number(self, token: IssuerToken) -> str | None:
        if not token.account_number:
            return None
        if may_see_account_number(_user(self)):
            return token.account_number
        return mask_account_number(token.account_number)

    def get_account_number_masked(self, token: IssuerToken) -> bool:
        return bool(token.account_number) and not may_see_account_number(_user(self))

    def to_representation(self, instance: IssuerToken) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        for name in ("call_method", "issuer_token", *_BANK_FIELDS):
            data[name] = data[name] or None  # "not given" is null, as the gateway omits it
        return data


class WebhookConfigurationSerializer(serializers.ModelSerializer[WebhookConfiguration]):
    """A webhook configuration. Its auth token is never kept in clear nor rendered."""

    id = serializers.UUIDField(source="gateway_id", read_only=True)
    triggers = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = WebhookConfiguration
        fields = (
            "id",
            "account",
            "platform_id",
            "merchant_id",
            "store_id",
            "triggers",
            "url",
            "active",
            "is_integration",
            "created_on",
            "updated_on",
            "synced_at",
            "removed_at",
        )
        read_only_fields = fields


class WebhookConfigurationListSerializer(serializers.Serializer[Any]):
    items = WebhookConfigurationSerializer(many=True)
    has_more = serializers.BooleanField()


class FieldErrorSerializer(serializers.Serializer[Any]):
    field = serializers.CharField(help_text="Dotted field name, or non_field_errors.")
    reason = serializers.CharField()


#: Every error answer of the API, for the schema (a class could not name a field ``errors``:
#: it is a Serializer property).
ERROR_SCHEMA = inline_serializer(
    name="Error",
    fields={
        "code": serializers.CharField(help_text="Stable machine-readable code (see docs/api.md)."),
        "message": serializers.CharField(help_text="Human-readable, translated."),
        "errors": FieldErrorSerializer(many=True),
        "status": serializers.CharField(
            required=False, help_text="The charge's current status (code charge_status only)."
        ),
    },
)
