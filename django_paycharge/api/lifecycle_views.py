"""Capture, cancel and refund a charge through the API; list its refunds and cancels.

Who may: ``PAYCHARGE["API_ACTION_PERMISSION_CLASSES"]``, by default active
staff who also hold the action's permission (``django_paycharge.refund_charge``
and so on, as in the admin). The ``Idempotency-Key`` header works as for
creating a charge (:func:`.idempotency.idempotent`): the same key and body
replay the first answer, another body is 409 ``idempotency_key_reused``, and a
request retried after an answer that was not final joins the service request
of the first one (:func:`.idempotency.caller_key`), so nothing is captured,
canceled or refunded twice. Only final answers are kept: when the gateway has
not answered for sure, 503 ``outcome_unknown`` with ``Retry-After`` (not a
refusal: do not act again with a new key); the same key sent again later
answers the outcome once the request has been found or known to have done
nothing. While another action on the charge is being sent: 409
``charge_busy`` with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services
from ..models import Cancel, Refund
from .idempotency import caller_key, idempotent
from .lifecycle_serializers import (
    CancelRequestSerializer,
    CancelSerializer,
    CaptureRequestSerializer,
    RefundRequestSerializer,
    RefundSerializer,
)
from .permissions import permissions_from_setting
from .serializers import ChargeSerializer
from .views import PayChargeAPIView, _errors, _get_charge, _id_parameter, api_schema

IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Your key for this action (1-255 printable ASCII characters, no spaces). The "
    "same key and body replay the first final answer; another body is 409 "
    "idempotency_key_reused; while the first request runs, 409 idempotency_key_in_progress. "
    "503 outcome_unknown (with Retry-After) is not final: send the same key again later.",
)
#: ``Idempotency-Key`` scopes (with the caller) of the three actions.
CAPTURE_PURPOSE = "charges.capture"
REFUND_PURPOSE = "charges.refund"
CANCEL_PURPOSE = "charges.cancel"


class HasChargeActionPermission(BasePermission):
    """The user holds the view's permission (``capture_charge``, ``suspend_subscription``...)."""

    message = _("You may not do this to charges.")

    def has_permission(self, request: Request, view: APIView) -> bool:
        codename = getattr(view, "action_permission", None)
        if codename is None or request.method in ("GET", "HEAD", "OPTIONS"):
            return True
        # A view acting on something else than charges (subscriptions) says so.
        self.message = getattr(view, "permission_message", self.message)
        return bool(request.user and request.user.has_perm(f"django_paycharge.{codename}"))


def _act(
    request: Request,
    charge_id: str,
    service: Callable[..., Any],
    body: type[serializers.Serializer[Any]],
    purpose: str,
) -> Any:
    """``service`` run on the charge with the request's checked body, its key and its user."""
    charge = _get_charge(request, charge_id)
    serializer = body(data=request.data if request.data else {})
    serializer.is_valid(raise_exception=True)
    return service(
        charge,
        **serializer.validated_data,
        idempotency_key=caller_key(request, purpose),
        requested_by=str(request.user.get_username()) if request.user else "",
    )


def _listed(
    request: Request,
    charge_id: str,
    model: type[Refund] | type[Cancel],
    serializer: type[serializers.ModelSerializer[Any]],
) -> Response:
    """The charge's refunds or cancels in the mirror."""
    charge = _get_charge(request, charge_id)
    children = model.objects.filter(charge=charge).select_related("charge")
    return Response(serializer(children, many=True).data)


class _ActionView(PayChargeAPIView):
    action_permission: str

    def get_permissions(self) -> list[BasePermission]:
        return permissions_from_setting("API_ACTION_PERMISSION_CLASSES")


class ChargeCaptureView(_ActionView):
    """Capture an authorized charge, all of it or ``amount`` of it."""

    action_permission = "capture_charge"

    @api_schema(
        operation_id="charges_capture",
        parameters=[_id_parameter("charge_id"), IDEMPOTENCY_HEADER],
        request=CaptureRequestSerializer,
        responses={200: ChargeSerializer, **_errors(400, 401, 403, 404, 409, 502, 503)},
        description="409 charge_status when the charge is not authorized (or its "
        "authorization has expired: status failed).",
    )
    @idempotent(CAPTURE_PURPOSE)
    def post(self, request: Request, charge_id: str) -> Response:
        charge = _act(
            request, charge_id, services.capture_charge, CaptureRequestSerializer, CAPTURE_PURPOSE
        )
        return Response(ChargeSerializer(charge, context={"request": request}).data)


class ChargeRefundsView(_ActionView):
    """``GET``: the charge's refunds in the mirror. ``POST``: refund it."""

    action_permission = "refund_charge"

    @api_schema(
        operation_id="charges_refunds_list",
        parameters=[_id_parameter("charge_id")],
        responses={200: RefundSerializer(many=True), **_errors(401, 403, 404)},
    )
    def get(self, request: Request, charge_id: str) -> Response:
        return _listed(request, charge_id, Refund, RefundSerializer)

    @api_schema(
        operation_id="charges_refunds_create",
        parameters=[_id_parameter("charge_id"), IDEMPOTENCY_HEADER],
        request=RefundRequestSerializer,
        responses={201: RefundSerializer, **_errors(400, 401, 403, 404, 409, 502, 503)},
        description="The refund is usually pending; refund_finished webhooks finish it.",
    )
    @idempotent(REFUND_PURPOSE)
    def post(self, request: Request, charge_id: str) -> Response:
        refund = _act(
            request, charge_id, services.refund_charge, RefundRequestSerializer, REFUND_PURPOSE
        )
        return Response(RefundSerializer(refund).data, status=201)


class ChargeCancelsView(_ActionView):
    """``GET``: the charge's cancels in the mirror. ``POST``: cancel it."""

    action_permission = "cancel_charge"

    @api_schema(
        operation_id="charges_cancels_list",
        parameters=[_id_parameter("charge_id")],
        responses={200: CancelSerializer(many=True), **_errors(401, 403, 404)},
    )
    def get(self, request: Request, charge_id: str) -> Response:
        return _listed(request, charge_id, Cancel, CancelSerializer)

    @api_schema(
        operation_id="charges_cancels_create",
        parameters=[_id_parameter("charge_id"), IDEMPOTENCY_HEADER],
        request=CancelRequestSerializer,
        responses={201: CancelSerializer, **_errors(400, 401, 403, 404, 409, 502, 503)},
    )
    @idempotent(CANCEL_PURPOSE)
    def post(self, request: Request, charge_id: str) -> Response:
        cancel = _act(
            request, charge_id, services.cancel_charge, CancelRequestSerializer, CANCEL_PURPOSE
        )
        return Response(CancelSerializer(cancel).data, status=201)
