"""Subscriptions through the API: list, read and create them; suspend, resume, cancel them and
change their card; read their scheduled payments.

Staff only by default, as the charge list: reads need an active staff user
(:class:`.permissions.IsStaffUser`); a create needs ``API_CREATE_PERMISSION_CLASSES``
and ``API_DIRECT_AMOUNT_PERMISSION_CLASSES`` (the caller gives the amount); a change
needs ``API_ACTION_PERMISSION_CLASSES``, by default staff holding the change's Django
permission, as the admin asks. ``Idempotency-Key`` works as for the charge actions
(:mod:`.lifecycle_views`). A change the subscription's status does not allow is refused
before anything is sent: 409 ``subscription_status`` with ``status`` and ``reason``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, serializers
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from .. import services
from ..client.vocabulary import CURSOR_DIRECTIONS
from ..models import Subscription
from .idempotency import caller_key, idempotent
from .lifecycle_views import IDEMPOTENCY_HEADER, _ActionView
from .pagination import page
from .permissions import IsStaffUser, may_send_amount, permissions_from_setting
from .subscription_serializers import (
    CardChangeRequestSerializer,
    EmptyRequestSerializer,
    ScheduledPaymentSerializer,
    SubscriptionCreateSerializer,
    SubscriptionPageSerializer,
    SubscriptionSerializer,
    SuspendRequestSerializer,
)
from .views import PayChargeAPIView, _errors, _id_parameter, api_schema

CREATE_PURPOSE = "subscriptions.create"
_ID = _id_parameter("subscription_id")


def _get_subscription(subscription_id: str) -> Subscription:
    try:
        gateway_id = uuid.UUID(subscription_id)
    except ValueError:
        raise exceptions.NotFound() from None
    subscription = Subscription.objects.filter(gateway_id=gateway_id).first()
    if subscription is None:
        raise exceptions.NotFound()
    return subscription


def _who(request: Request) -> str:
    return str(request.user.get_username()) if request.user else ""


class SubscriptionListCreateView(PayChargeAPIView):
    """``GET``: staff list the mirror, newest first. ``POST``: create a subscription."""

    def get_permissions(self) -> list[BasePermission]:
        if self.request.method == "POST":
            return permissions_from_setting("API_CREATE_PERMISSION_CLASSES")
        return [IsStaffUser()]

    @api_schema(
        operation_id="subscriptions_list",
        parameters=[
            OpenApiParameter("limit", int, description="10 to 100; default 10."),
            OpenApiParameter("cursor", OpenApiTypes.UUID, description="Start after this one."),
            OpenApiParameter("cursor_direction", str, enum=list(CURSOR_DIRECTIONS)),
        ],
        responses={200: SubscriptionPageSerializer, **_errors(400, 401, 403)},
    )
    def get(self, request: Request) -> Response:
        query = Subscription.objects.all()
        items, has_more = page(query, request.query_params, _("no subscription has this id"))
        return Response(
            {"items": SubscriptionSerializer(items, many=True).data, "has_more": has_more}
        )

    @api_schema(
        operation_id="subscriptions_create",
        parameters=[IDEMPOTENCY_HEADER],
        request=SubscriptionCreateSerializer,
        responses={201: SubscriptionSerializer, **_errors(400, 401, 403, 404, 409, 502, 503)},
    )
    @idempotent(CREATE_PURPOSE)
    def post(self, request: Request) -> Response:
        if not may_send_amount(request, self):
            raise exceptions.PermissionDenied()
        body = SubscriptionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription = services.create_subscription(
            **body.validated_data,
            idempotency_key=caller_key(request, CREATE_PURPOSE),
            requested_by=_who(request),
        )
        return Response(SubscriptionSerializer(subscription).data, status=201)


class SubscriptionDetailView(PayChargeAPIView):
    permission_classes = [IsStaffUser]

    @api_schema(
        operation_id="subscriptions_retrieve",
        parameters=[_ID],
        responses={200: SubscriptionSerializer, **_errors(401, 403, 404)},
    )
    def get(self, request: Request, subscription_id: str) -> Response:
        return Response(SubscriptionSerializer(_get_subscription(subscription_id)).data)


class ScheduledPaymentsView(PayChargeAPIView):
    """The subscription's scheduled payments, read from the gateway (and mirrored)."""

    permission_classes = [IsStaffUser]

    @api_schema(
        operation_id="subscriptions_scheduled_payments",
        parameters=[_ID],
        responses={200: ScheduledPaymentSerializer(many=True), **_errors(401, 403, 404, 502, 503)},
    )
    def get(self, request: Request, subscription_id: str) -> Response:
        payments = services.scheduled_payments(_get_subscription(subscription_id))
        return Response(ScheduledPaymentSerializer(payments, many=True).data)


def _change(
    request: Request,
    subscription_id: str,
    service: Callable[..., Subscription],
    body: type[serializers.Serializer[Any]],
    purpose: str,
) -> Response:
    """``service`` run on the subscription with the checked body, the key and the user."""
    subscription = _get_subscription(subscription_id)
    serializer = body(data=request.data if request.data else {})
    serializer.is_valid(raise_exception=True)
    changed = service(
        subscription,
        **serializer.validated_data,
        idempotency_key=caller_key(request, purpose),
        requested_by=_who(request),
    )
    return Response(SubscriptionSerializer(changed).data)


def _change_view(
    name: str, permission: str, service: Callable[..., Subscription], body: type[Any], doc: str
) -> type[_ActionView]:
    """The view of one change: ``POST subscriptions/<id>/<name>/``."""
    purpose = f"subscriptions.{name}"

    class ChangeView(_ActionView):
        action_permission = permission
        permission_message = gettext_lazy("You may not do this to subscriptions.")
        __doc__ = doc

        @api_schema(
            operation_id=f"subscriptions_{name}",
            parameters=[_ID, IDEMPOTENCY_HEADER],
            request=None if body is EmptyRequestSerializer else body,
            responses={200: SubscriptionSerializer, **_errors(400, 401, 403, 404, 409, 502, 503)},
            description=doc + " 409 subscription_status when its status does not allow it.",
        )
        @idempotent(purpose)
        def post(self, request: Request, subscription_id: str) -> Response:
            return _change(request, subscription_id, service, body, purpose)

    ChangeView.__name__ = ChangeView.__qualname__ = f"Subscription{name.title()}View"
    return ChangeView


SuspendView = _change_view(
    "suspend",
    "suspend_subscription",
    services.suspend_subscription,
    SuspendRequestSerializer,
    "Suspend a current or unpaid subscription.",
)
ResumeView = _change_view(
    "resume",
    "resume_subscription",
    services.resume_subscription,
    EmptyRequestSerializer,
    "Resume a suspended subscription; it is unpaid until its next payment.",
)
CancelView = _change_view(
    "cancel",
    "cancel_subscription",
    services.cancel_subscription,
    EmptyRequestSerializer,
    "Cancel a subscription for good.",
)
CardView = _change_view(
    "card",
    "change_subscription_card",
    services.change_subscription_card,
    CardChangeRequestSerializer,
    "Charge the next payments to another card (a token of type subscription).",
)
