"""The API's views: thin, each calls one service (or reads the mirror) and renders."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.db import DataError, transaction
from django.utils.decorators import method_decorator
from django.utils.module_loading import import_string
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from .. import access, conf, services
from ..client.params import CREATE_FIELDS
from ..client.vocabulary import CURSOR_DIRECTIONS
from ..exceptions import ConfigurationError
from ..models import Charge, WebhookConfiguration, with_refunded_amounts
from .create import ChargeCreateSerializer
from .errors import api_exception_handler
from .filters import FILTER_PARAMETERS, filter_charges
from .idempotency import caller_key, idempotent
from .pagination import charge_page
from .parsers import SafeJSONParser
from .permissions import IsStaffUser, may_send_amount, permissions_from_setting
from .serializers import (
    ERROR_SCHEMA,
    ChargePageSerializer,
    ChargeSerializer,
    IssuerTokenSerializer,
    WebhookConfigurationListSerializer,
    WebhookConfigurationSerializer,
)

ChargeHook = Callable[[Request, Mapping[str, Any]], Mapping[str, Any]]
CREATE_PURPOSE = "charges.create"


F = TypeVar("F", bound=Callable[..., Any])


def api_schema(**kwargs: Any) -> Callable[[F], F]:
    """``@extend_schema`` on drf-spectacular's AutoSchema, whatever DEFAULT_SCHEMA_CLASS says."""

    def decorator(func: F) -> F:
        # extend_schema builds on the schema class it finds in func.kwargs first.
        setattr(func, "kwargs", {"schema": AutoSchema})  # noqa: B010
        decorated: F = extend_schema(**kwargs)(func)
        return decorated

    return decorator


def _errors(*statuses: int) -> dict[int, OpenApiResponse]:
    return {s: OpenApiResponse(ERROR_SCHEMA) for s in statuses}


def _id_parameter(name: str) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.UUID, OpenApiParameter.PATH)


# The create service commits its request row before calling the gateway, so it must
# not run inside ATOMIC_REQUESTS' transaction; the issuer token call should not hold
# one open across a gateway call either.
@method_decorator(transaction.non_atomic_requests, name="dispatch")
class PayChargeAPIView(APIView):
    """Base of the API's views: their own error shape, never the shop's global handler."""

    # drf-spectacular's schema whatever the shop's DEFAULT_SCHEMA_CLASS is; JSON only,
    # since the create body nests objects that form encodings cannot carry.
    schema = AutoSchema()
    parser_classes = [SafeJSONParser]
    renderer_classes = [JSONRenderer]

    def get_exception_handler(self) -> Callable[..., Response | None]:
        return api_exception_handler

    def perform_authentication(self, request: Request) -> None:
        # A credential the database cannot even look up (a NUL byte in a Basic username,
        # which PostgreSQL refuses) is none the shop issued: 401, not a 500. The savepoint
        # keeps a surrounding transaction usable.
        try:
            with transaction.atomic():
                super().perform_authentication(request)
        except DataError:
            raise exceptions.AuthenticationFailed() from None


def _get_charge(request: Request, charge_id: str) -> Charge:
    """The charge if this caller may see it; 404 otherwise (its existence is not revealed)."""
    try:
        gateway_id = uuid.UUID(charge_id)
    except ValueError:
        raise exceptions.NotFound() from None
    charge = Charge.objects.filter(gateway_id=gateway_id).first()
    if charge is None or not access.can_access_charge(request._request, charge):
        raise exceptions.NotFound()
    return charge


class ChargeListCreateView(PayChargeAPIView):
    """``GET``: staff list the mirror, narrowed by the filters below. ``POST``: create a
    charge (see docs/api.md)."""

    def get_permissions(self) -> list[BasePermission]:
        if self.request.method == "POST":
            return permissions_from_setting("API_CREATE_PERMISSION_CLASSES")
        return [IsStaffUser()]

    def get_throttles(self) -> list[BaseThrottle]:
        if self.request.method != "POST":
            return []
        entries = conf.get_setting("API_CREATE_THROTTLE_CLASSES") or []
        return [(import_string(e) if isinstance(e, str) else e)() for e in entries]

    @api_schema(
        operation_id="charges_list",
        parameters=[
            OpenApiParameter("limit", int, description="10 to 100; default 10."),
            OpenApiParameter("cursor", OpenApiTypes.UUID, description="Start after this charge."),
            OpenApiParameter("cursor_direction", str, enum=list(CURSOR_DIRECTIONS)),
            *FILTER_PARAMETERS,
        ],
        responses={200: ChargePageSerializer, **_errors(400, 401, 403)},
    )
    def get(self, request: Request) -> Response:
        charges = filter_charges(Charge.objects.all(), request.query_params)
        charges = with_refunded_amounts(charges)  # no query per row
        items, has_more = charge_page(charges, request.query_params)
        data = ChargeSerializer(items, many=True, context={"request": request}).data
        return Response({"items": data, "has_more": has_more})

    @api_schema(
        operation_id="charges_create",
        request=ChargeCreateSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="Your key for this payment (1-255 printable ASCII characters, no "
                "spaces). The same key and body replay the first answer; another body is 409 "
                "idempotency_key_reused. Send it again after 503 charge_outcome_unknown.",
            )
        ],
        responses={201: ChargeSerializer, **_errors(400, 401, 403, 404, 409, 429, 502, 503)},
    )
    @idempotent(CREATE_PURPOSE)
    def post(self, request: Request) -> Response:
        hook = conf.get_setting("API_CHARGE_HOOK")
        serializer = ChargeCreateSerializer(
            data=request.data,
            context={
                "direct_amount": may_send_amount(request, self),
                "hook_available": bool(hook),
            },
        )
        serializer.is_valid(raise_exception=True)
        params = dict(serializer.validated_data)
        reference = params.pop("reference")
        if params["amount"] is None:
            params.update(_call_hook(hook, request, {**params, "reference": reference}))
        # The header's key makes a retry join the first request's charge request.
        params.setdefault("idempotency_key", caller_key(request, CREATE_PURPOSE))
        charge = services.create_charge(**params)
        if hasattr(request._request, "session"):
            access.grant_charge_access(request._request, charge)
        body = ChargeSerializer(charge, context={"request": request}).data
        return Response(body, status=201)


def _call_hook(hook: Any, request: Request, data: Mapping[str, Any]) -> dict[str, Any]:
    """The shop's amount, currency and other arguments for this request."""
    if not hook:
        raise ConfigurationError(
            "PAYCHARGE['API_CHARGE_HOOK'] is not set: the charge API cannot tell the amount."
        )
    func: ChargeHook = import_string(hook) if isinstance(hook, str) else hook
    result = func(request, data)
    if not isinstance(result, Mapping):
        raise ConfigurationError("PAYCHARGE['API_CHARGE_HOOK'] must return a dict.")
    unknown = sorted(set(result) - set(CREATE_FIELDS) - {"account", "idempotency_key"})
    if unknown or "amount" not in result or "currency" not in result:
        raise ConfigurationError(
            "PAYCHARGE['API_CHARGE_HOOK'] must return amount and currency, and only "
            f"create_charge arguments (unknown: {', '.join(unknown) or 'none'})."
        )
    return dict(result)


class ChargeDetailView(PayChargeAPIView):
    """One charge of the mirror, for its owner (see :mod:`django_paycharge.access`) or staff."""

    permission_classes = [AllowAny]  # per object: _get_charge answers 404 to anyone else

    @api_schema(
        operation_id="charges_retrieve",
        parameters=[_id_parameter("charge_id")],
        responses={200: ChargeSerializer, **_errors(404)},
    )
    def get(self, request: Request, charge_id: str) -> Response:
        charge = _get_charge(request, charge_id)
        return Response(ChargeSerializer(charge, context={"request": request}).data)


class ChargeIssuerTokenView(PayChargeAPIView):
    """Fetch the charge's issuer token from the gateway (online wallet, bank transfer)."""

    permission_classes = [AllowAny]

    @api_schema(
        operation_id="charges_issuer_token",
        parameters=[_id_parameter("charge_id")],
        responses={200: IssuerTokenSerializer, **_errors(404, 409, 502, 503)},
        description=(
            "409 charge_status (with status) for a bank transfer that is not awaiting "
            "payment; 409 unsupported_payment_type for card and konbini charges."
        ),
    )
    def get(self, request: Request, charge_id: str) -> Response:
        charge = _get_charge(request, charge_id)
        token = services.fetch_issuer_token(charge)
        return Response(IssuerTokenSerializer(token, context={"request": request}).data)


class WebhookConfigurationListView(PayChargeAPIView):
    """The mirror's webhook configurations, for staff (all in one page: a store has few)."""

    permission_classes = [IsStaffUser]

    @api_schema(
        operation_id="webhooks_list",
        responses={200: WebhookConfigurationListSerializer, **_errors(401, 403)},
    )
    def get(self, request: Request) -> Response:
        configs = WebhookConfiguration.objects.order_by("-created_on", "-id")
        items = WebhookConfigurationSerializer(configs, many=True).data
        return Response({"items": items, "has_more": False})


class WebhookConfigurationDetailView(PayChargeAPIView):
    """One webhook configuration of the mirror, for staff."""

    permission_classes = [IsStaffUser]

    @api_schema(
        operation_id="webhooks_retrieve",
        parameters=[_id_parameter("webhook_id")],
        responses={200: WebhookConfigurationSerializer, **_errors(401, 403, 404)},
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        try:
            gateway_id = uuid.UUID(webhook_id)
        except ValueError:
            raise exceptions.NotFound() from None
        config = WebhookConfiguration.objects.filter(gateway_id=gateway_id).first()
        if config is None:
            raise exceptions.NotFound()
        return Response(WebhookConfigurationSerializer(config).data)
