"""What the capture, cancel and refund endpoints take and render.

Request bodies are documented here for the schema; their rules are the
client's (:mod:`django_paycharge.client.lifecycle_params`), applied by the
services, so the API, the admin and the services refuse the same input.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from ..client.vocabulary import REFUND_REASONS
from ..models import Cancel, Refund

_CHILD_FIELDS = (
    "id",
    "charge_id",
    "store_id",
    "status",
    "error",
    "metadata",
    "mode",
    "created_on",
    "updated_on",
    "synced_at",
)


class RefundSerializer(serializers.ModelSerializer[Refund]):
    """A refund of the mirror; ``amount`` in the currency's smallest unit."""

    id = serializers.UUIDField(source="gateway_id", read_only=True)
    charge_id = serializers.UUIDField(source="charge.gateway_id", read_only=True)

    class Meta:
        model = Refund
        fields = (*_CHILD_FIELDS, "amount", "currency", "amount_formatted", "reason", "message")
        read_only_fields = fields


class CancelSerializer(serializers.ModelSerializer[Cancel]):
    """A cancel of the mirror."""

    id = serializers.UUIDField(source="gateway_id", read_only=True)
    charge_id = serializers.UUIDField(source="charge.gateway_id", read_only=True)

    class Meta:
        model = Cancel
        fields = _CHILD_FIELDS
        read_only_fields = fields


class _Strict(serializers.Serializer[Any]):
    """Unknown fields are refused, not ignored (a typo must not refund everything)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["is not a known field"] for name in unknown}
                )
        return super().to_internal_value(data)


class CaptureRequestSerializer(_Strict):
    amount = serializers.IntegerField(
        required=False, min_value=1, help_text="Minor units; leave out to capture it all."
    )
    currency = serializers.CharField(required=False, help_text="The charge's (ISO-4217).")


class RefundRequestSerializer(_Strict):
    amount = serializers.IntegerField(
        required=False, min_value=1, help_text="Minor units; leave out to refund all that is left."
    )
    currency = serializers.CharField(required=False, help_text="The charged currency.")
    reason = serializers.ChoiceField(choices=REFUND_REASONS, required=False)
    message = serializers.CharField(required=False, max_length=1000)
    metadata = serializers.DictField(required=False, help_text="Flat: string, number, boolean.")


class CancelRequestSerializer(_Strict):
    metadata = serializers.DictField(required=False, help_text="Flat: string, number, boolean.")
