"""Error types raised by the client and the services.

Every error is a :class:`PayChargeError`. Messages say what happened and what
to do; they never contain credentials or bank account numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``{"field": ..., "reason": ...}`` pair of an error answer or a local check."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}" if self.field else self.reason


class PayChargeError(Exception):
    """Base class of every error this app raises."""

    default_message = "The payment service request failed."

    def __init__(
        self,
        message: str | None = None,
        *,
        http_status: int | None = None,
        code: str | None = None,
        errors: Sequence[FieldError] = (),
        request_id: str | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.http_status = http_status
        self.code = code
        self.errors: list[FieldError] = list(errors)
        self.request_id = request_id
        super().__init__(self.message)

    def __str__(self) -> str:
        parts = [self.message]
        if self.errors:
            parts.append("(" + "; ".join(str(e) for e in self.errors) + ")")
        if self.request_id:
            parts.append(f"[request id {self.request_id}]")
        return " ".join(parts)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, http_status={self.http_status!r}, "
            f"code={self.code!r}, errors={self.errors!r}, request_id={self.request_id!r})"
        )


class ConfigurationError(PayChargeError):
    """The ``PAYCHARGE`` setting is missing a key or holds a malformed value."""

    default_message = "The PAYCHARGE setting is not configured correctly."


class InvalidParametersError(PayChargeError, ValueError):
    """Input breaks a rule of the spec; raised before any HTTP request is sent."""

    default_message = "The request breaks a rule of the payment service; nothing was sent."


class NetworkError(PayChargeError):
    """The gateway could not be reached, or did not answer in time."""

    default_message = "The payment service could not be reached; try again later."


class InvalidResponseError(PayChargeError):
    """A 2xx answer whose body is not the JSON it should be."""

    default_message = "The payment service sent an answer that could not be read."


class APIError(PayChargeError):
    """The gateway answered with a non-2xx status."""


class BadRequestError(APIError):
    """400: the gateway rejected the request as invalid (``errors`` names the fields)."""

    default_message = "The payment service rejected the request as invalid."


class AuthenticationError(APIError):
    """401: the app token's secret or JWT was not accepted."""

    default_message = (
        "The payment service rejected the credentials: check PAYCHARGE['SECRET'] and "
        "PAYCHARGE['JWT']."
    )


class PermissionDeniedError(APIError):
    """403: the app token may not do this (a store token reaches one store)."""

    default_message = "The app token is not allowed to do this."


class NotFoundError(APIError):
    """404: the gateway has no such resource (or not for these credentials)."""

    default_message = "The payment service has no such resource."


class ConflictError(APIError):
    """409: the request conflicts with the resource's state or an idempotency key."""

    default_message = "The request conflicts with the current state of the resource."


class RateLimitError(APIError):
    """429: the gateway is rate limiting; retried with backoff before this is raised."""

    default_message = "The payment service is rate limiting requests; try again later."


class ServerError(APIError):
    """5xx: the gateway failed; retried with backoff before this is raised."""

    default_message = "The payment service had an internal error; try again later."


_STATUS_CLASSES: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
}


def error_class_for_status(status: int) -> type[APIError]:
    """The exception class for an HTTP status of a failed answer."""
    if status >= 500:
        return ServerError
    return _STATUS_CLASSES.get(status, APIError)


# Raised by services.
class ServiceError(PayChargeError):
    """A service refused an operation because of the state of the local mirror or the charge."""


class UnsupportedPaymentTypeError(ServiceError):
    """The operation does not exist for the charge's payment type."""

    default_message = "This operation is not available for the charge's payment type."


class ChargeStateError(ServiceError):
    """The charge's status does not allow the operation; ``status`` is the current one."""

    default_message = "The charge is not in a status that allows this operation."

    def __init__(self, message: str | None = None, *, status: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.status = status
