"""Error types raised by the client and the services.

Every error is a :class:`PayChargeError`. Messages say what happened and what
to do; they never contain credentials or bank account numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def gettext_noop(message: str) -> str:
    """Mark ``message`` for ``makemessages`` (it looks for this name); translated when shown.

    Defined here rather than imported from Django: the client raises these
    errors and imports no Django.
    """
    return message


def localize(message: str, default: str = "") -> str:
    """``message`` in the active language, when Django is set up and the catalog has it.

    A message that starts with ``default`` (the client appends details such as
    ``(HTTP 404)`` to a default message) has that part translated. Without
    Django settings or apps (the client used on its own) it is returned as is.
    """
    from django.apps import apps
    from django.conf import settings

    if not (settings.configured and apps.ready):
        return message
    from django.utils.translation import gettext

    translated = gettext(message) if message else message
    if translated == message and default and message.startswith(default):
        translated = gettext(default) + message[len(default) :]
    return translated


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``{"field": ..., "reason": ...}`` pair of an error answer or a local check."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}" if self.field else self.reason


class PayChargeError(Exception):
    """Base class of every error this app raises."""

    default_message = gettext_noop("The payment service request failed.")

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
        # Translated when shown (admin messages, pages), so the client stays free of Django.
        parts = [localize(self.message, self.default_message)]
        if self.errors:
            parts.append("(" + "; ".join(str(e) for e in self.errors) + ")")
        if self.request_id:
            label = localize(gettext_noop("[request id %(id)s]"))
            parts.append(label % {"id": self.request_id})
        return " ".join(parts)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, http_status={self.http_status!r}, "
            f"code={self.code!r}, errors={self.errors!r}, request_id={self.request_id!r})"
        )


class ConfigurationError(PayChargeError):
    """The ``PAYCHARGE`` setting is missing a key or holds a malformed value."""

    default_message = gettext_noop("The PAYCHARGE setting is not configured correctly.")


class InvalidParametersError(PayChargeError, ValueError):
    """Input breaks a rule of the spec; raised before any HTTP request is sent."""

    default_message = gettext_noop(
        "The request breaks a rule of the payment service; nothing was sent."
    )


class NetworkError(PayChargeError):
    """The gateway could not be reached, or did not answer in time."""

    default_message = gettext_noop("The payment service could not be reached; try again later.")


class InvalidResponseError(PayChargeError):
    """A 2xx answer whose body is not the JSON it should be."""

    default_message = gettext_noop("The payment service sent an answer that could not be read.")


class APIError(PayChargeError):
    """The gateway answered with a non-2xx status."""


class BadRequestError(APIError):
    """400: the gateway rejected the request as invalid (``errors`` names the fields)."""

    default_message = gettext_noop("The payment service rejected the request as invalid.")


class AuthenticationError(APIError):
    """401: the app token's secret or JWT was not accepted."""

    default_message = gettext_noop(
        "The payment service rejected the credentials: check PAYCHARGE['SECRET'] and "
        "PAYCHARGE['JWT']."
    )


class PermissionDeniedError(APIError):
    """403: the app token may not do this (a store token reaches one store)."""

    default_message = gettext_noop("The app token is not allowed to do this.")


class NotFoundError(APIError):
    """404: the gateway has no such resource (or not for these credentials)."""

    default_message = gettext_noop("The payment service has no such resource.")


class ConflictError(APIError):
    """409: the request conflicts with the resource's state or an idempotency key."""

    default_message = gettext_noop("The request conflicts with the current state of the resource.")


class RateLimitError(APIError):
    """429: the gateway is rate limiting; retried with backoff before this is raised."""

    default_message = gettext_noop(
        "The payment service is rate limiting requests; try again later."
    )


class ServerError(APIError):
    """5xx: the gateway failed; retried with backoff before this is raised."""

    default_message = gettext_noop("The payment service had an internal error; try again later.")


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

    default_message = gettext_noop("This operation is not available for the charge's payment type.")


class ChargeStateError(ServiceError):
    """The charge's status does not allow the operation; ``status`` is the current one."""

    default_message = gettext_noop("The charge is not in a status that allows this operation.")

    def __init__(self, message: str | None = None, *, status: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.status = status


class SyncInProgressError(ServiceError):
    """Another sync of the same account is running; ``holder`` says where, when known."""

    default_message = gettext_noop(
        "Another sync of this account is running; try again when it has finished."
    )

    def __init__(self, message: str | None = None, *, holder: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.holder = holder
