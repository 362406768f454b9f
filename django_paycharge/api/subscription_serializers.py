"""What the subscription endpoints take and render.

The create body's fields are :class:`~django_paycharge.client.SubscriptionCreateParams`'
own, and so are its rules, applied by the service: the API, the services and the fake
gateway refuse the same input (400 ``validation_error`` naming the field).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rest_framework import serializers

from ..client.subscription_params import SubscriptionCreateParams
from ..client.subscription_vocabulary import TERMINATION_MODES
from ..models import ScheduledPayment, Subscription
from .lifecycle_serializers import _Strict

_SUBSCRIPTION_FIELDS = (
    "id",
    "status",
    "amount",
    "amount_formatted",
    "currency",
    "initial_amount",
    "period",
    "cyclical_period",
    "next_payment_date",
    "payments_left",
    "cycles_left",
    "amount_left",
    "subscription_plan",
    "installment_plan",
    "schedule_settings",
    "descriptor",
    "transaction_token_id",
    "store_id",
    "metadata",
    "mode",
    "created_on",
    "updated_on",
    "synced_at",
)


class SubscriptionSerializer(serializers.ModelSerializer[Subscription]):
    """A subscription of the mirror; amounts in the currency's smallest unit."""

    id = serializers.UUIDField(source="gateway_id", read_only=True)

    class Meta:
        model = Subscription
        fields = _SUBSCRIPTION_FIELDS
        read_only_fields = fields


class SubscriptionPageSerializer(serializers.Serializer[Any]):
    items = SubscriptionSerializer(many=True)
    has_more = serializers.BooleanField()


class ScheduledPaymentSerializer(serializers.ModelSerializer[ScheduledPayment]):
    """One payment of a subscription's schedule, as the gateway last told."""

    id = serializers.UUIDField(source="gateway_id", read_only=True)

    class Meta:
        model = ScheduledPayment
        fields = (
            "id",
            "due_date",
            "zone_id",
            "amount",
            "currency",
            "is_paid",
            "is_last_payment",
            "successful_payment_date",
            "retry_date",
        )
        read_only_fields = fields


def _create_field(field: dataclasses.Field[Any]) -> serializers.Field[Any, Any, Any, Any]:
    required = field.default is dataclasses.MISSING
    return serializers.JSONField(required=required, help_text="See docs/subscriptions.md.")


class SubscriptionCreateSerializer(_Strict):
    """``SubscriptionCreateParams``' fields, checked by its rules (the service applies them)."""

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        for field in dataclasses.fields(SubscriptionCreateParams):
            fields[field.name] = _create_field(field)
        return fields


class SuspendRequestSerializer(_Strict):
    termination_mode = serializers.ChoiceField(choices=sorted(TERMINATION_MODES), required=False)


class EmptyRequestSerializer(_Strict):
    pass


class CardChangeRequestSerializer(_Strict):
    transaction_token_id = serializers.UUIDField(help_text="A token of type subscription.")
