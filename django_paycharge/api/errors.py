"""One JSON shape for every error of the API, and gateway failures mapped to our statuses.

Every error answer is ``{"code": ..., "message": ..., "errors": [{"field", "reason"}]}``
(plus ``status`` for ``charge_status``, ``status`` and ``reason`` for
``subscription_status``; ``outcome`` and ``kind`` for ``outcome_unknown``).
An answer that is not final (the caller should send the same request again later)
carries ``Retry-After``. The handler is set on the API's views
only: the shop's global ``REST_FRAMEWORK["EXCEPTION_HANDLER"]`` is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions, status
from rest_framework.response import Response

from .. import conf
from ..exceptions import (
    APIError,
    BadRequestError,
    ChargeBusyError,
    ChargeOutcomeUnknownError,
    ChargeStateError,
    ConfigurationError,
    ConflictError,
    FieldError,
    IdempotencyKeyReusedError,
    InvalidParametersError,
    NetworkError,
    NotFoundError,
    OutcomeUnknownError,
    PayChargeError,
    PaymentDetailsRejectedError,
    RateLimitError,
    RequestAbandonedError,
    SubscriptionStateError,
    UnsupportedPaymentTypeError,
)

logger = logging.getLogger("django_paycharge.api")

NON_FIELD = "non_field_errors"


def error_response(
    http_status: int,
    code: str,
    message: str,
    errors: Iterable[FieldError] = (),
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    """An error answer in the API's one shape."""
    body: dict[str, Any] = {
        "code": code,
        "message": message,
        "errors": [{"field": e.field or NON_FIELD, "reason": e.reason} for e in errors],
        **extra,
    }
    return Response(body, status=http_status, headers=dict(headers or {}))


def flatten_detail(detail: Any, prefix: str = "") -> list[FieldError]:
    """DRF's nested ``ValidationError.detail`` as a flat list with dotted field names."""
    if isinstance(detail, Mapping):
        found: list[FieldError] = []
        for key, value in detail.items():
            name = str(key) if not prefix or key == NON_FIELD else f"{prefix}.{key}"
            found.extend(flatten_detail(value, name))
        return found
    if isinstance(detail, list | tuple):
        return [error for item in detail for error in flatten_detail(item, prefix)]
    return [FieldError(prefix or NON_FIELD, str(detail))]


def api_exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response | None:
    """The API's exception handler: DRF errors and :class:`PayChargeError` in one shape."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        return _drf_error(exc)
    if isinstance(exc, PayChargeError):
        return _paycharge_error(exc)
    return None  # a bug of ours: let Django report it


def _drf_error(exc: exceptions.APIException) -> Response:
    headers: dict[str, str] = {}
    auth_header = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    wait = getattr(exc, "wait", None)
    if wait:
        headers["Retry-After"] = str(int(wait))
    if isinstance(exc, exceptions.ValidationError):
        return error_response(
            status.HTTP_400_BAD_REQUEST,
            "validation_error",
            _("The request is not valid: see errors."),
            flatten_detail(exc.detail),
            headers=headers,
        )
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.default_detail)
    return error_response(exc.status_code, str(exc.default_code), str(detail), headers=headers)


def _retry_after() -> dict[str, str]:
    return {"Retry-After": str(int(conf.get_setting("API_RETRY_AFTER")))}


def _paycharge_error(exc: PayChargeError) -> Response:
    refused = _refused(exc)
    if refused is not None:
        return refused
    if isinstance(exc, ConfigurationError):
        # The message names a setting: useful in the log, not to a storefront.
        logger.error("Payment API misconfigured: %s", exc.message)
        return error_response(
            503,
            "not_configured",
            _("Payments are not available right now."),
            headers=_retry_after(),
        )
    if isinstance(exc, APIError) and exc.owner_problem:
        # 401, 403, an unknown store: the shop's settings, told to its owner
        # (services.problems); the caller learns only that nothing was charged.
        return error_response(
            503, "payments_unavailable", exc.customer_message, headers=_retry_after()
        )
    if isinstance(exc, APIError):
        return _gateway_error(exc)
    if isinstance(exc, NetworkError):
        logger.warning("Payment gateway unreachable: %s", exc.message)
        return error_response(
            503,
            "gateway_unavailable",
            _("The payment service could not be reached; try again later."),
            headers=_retry_after(),
        )
    logger.warning("Payment gateway call failed: %s", type(exc).__name__)
    return error_response(502, "gateway_error", _("The payment service failed; try again later."))


def _refused(exc: PayChargeError) -> Response | None:
    """The answer to a request we refused or could not settle (its arguments, the charge's
    state, its key, its outcome), or None for a failure of the setup or the gateway."""
    if isinstance(exc, InvalidParametersError):
        return error_response(
            400, "validation_error", _("The request is not valid: see errors."), exc.errors
        )
    if isinstance(exc, ChargeBusyError):
        # Not final: nothing was sent, and the same key may be sent again once the other ends.
        return error_response(409, "charge_busy", str(exc), headers=_retry_after())
    if isinstance(exc, ChargeStateError):
        return error_response(409, "charge_status", exc.message, status=exc.status)
    if isinstance(exc, SubscriptionStateError):
        # ``reason``: the refusal the gateway's SDKs name (SUBSCRIPTION_ALREADY_ENDED...).
        return error_response(
            409, "subscription_status", exc.message, status=exc.status, reason=exc.code
        )
    if isinstance(exc, IdempotencyKeyReusedError):
        return error_response(409, "idempotency_key_reused", str(exc))
    if isinstance(exc, ChargeOutcomeUnknownError):
        # Not "failed": the gateway may have made the charge. A new token would risk a second.
        return error_response(
            503,
            "charge_outcome_unknown",
            _(
                "We could not confirm whether the charge was made. Do not pay again with "
                "another token: send this request again with the same Idempotency-Key to check."
            ),
            headers=_retry_after(),
        )
    if isinstance(exc, OutcomeUnknownError):
        # Not a refusal: the gateway may have done it. Retryable: the same key later answers
        # the outcome once it is known (the request is looked for, never sent again).
        return error_response(
            503,
            "outcome_unknown",
            str(exc),
            headers=_retry_after(),
            outcome="unknown",
            kind=getattr(exc, "kind", ""),
        )
    if isinstance(exc, RequestAbandonedError):
        return error_response(409, "request_abandoned", str(exc))
    if isinstance(exc, UnsupportedPaymentTypeError):
        return error_response(409, "unsupported_payment_type", exc.message)
    return None


def _gateway_error(exc: APIError) -> Response:
    logger.warning(
        "Payment gateway answered %s (%s, request id %s)", exc.http_status, exc.code, exc.request_id
    )
    if isinstance(exc, PaymentDetailsRejectedError):
        return error_response(
            400, "payment_rejected", _("The payment details were not accepted."), exc.errors
        )
    if isinstance(exc, BadRequestError):
        return error_response(
            400,
            "gateway_validation_error",
            _("The payment service rejected the request: see errors."),
            exc.errors,
        )
    if isinstance(exc, NotFoundError):
        return error_response(404, "not_found", _("The payment service has no such resource."))
    if isinstance(exc, ConflictError):
        return error_response(
            409,
            "gateway_conflict",
            _("The request conflicts with the current state of the payment."),
            exc.errors,
        )
    if isinstance(exc, RateLimitError):
        return error_response(
            503,
            "gateway_rate_limited",
            _("The payment service is busy; try again later."),
            headers=_retry_after(),
        )
    # 5xx and other statuses: the gateway's failure.
    return error_response(502, "gateway_error", _("The payment service failed; try again later."))
