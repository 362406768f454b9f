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


#: What a customer is told for each ``outcome`` (:attr:`PayChargeError.customer_message`).
CUSTOMER_MESSAGES = {
    "refused": gettext_noop(
        "Your payment was not accepted; you were not charged. Please check your payment "
        "details, or pay another way."
    ),
    "not_sent": gettext_noop("Payments are unavailable right now; you were not charged."),
    "unknown": gettext_noop(
        "We could not confirm your payment. Please do not pay again: we will check it."
    ),
}


class PayChargeError(Exception):
    """Base class of every error this app raises.

    ``outcome`` is set on the errors :func:`services.create_charge` raises:
    ``"refused"`` (final: nothing was charged and nothing will be charged for
    this request), ``"not_sent"`` (nothing reached the payment processing: the
    request never left, or the gateway refused the shop's own settings; nothing
    was charged, and it is not the customer's doing) or ``"unknown"``
    (:class:`ChargeOutcomeUnknownError`).

    ``owner_problem`` names what the shop's owner must fix when the failure is
    theirs (``"credentials"``, ``"permissions"``, ``"store"``, ``"settings"``;
    ``"unreachable"`` when the gateway could not be reached), None otherwise.
    """

    default_message = gettext_noop("The payment service request failed.")
    outcome: str | None = None
    owner_problem: str | None = None

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

    @property
    def customer_message(self) -> str:
        """What to tell the customer, by ``outcome`` (translated; "" without an outcome).

        Never the error's own message: that one is for staff and the owner.
        """
        message = CUSTOMER_MESSAGES.get(self.outcome or "")
        return localize(message) if message else ""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, http_status={self.http_status!r}, "
            f"code={self.code!r}, errors={self.errors!r}, request_id={self.request_id!r})"
        )


class ConfigurationError(PayChargeError):
    """The ``PAYCHARGE`` setting is missing a key or holds a malformed value."""

    default_message = gettext_noop("The PAYCHARGE setting is not configured correctly.")
    outcome = "not_sent"
    owner_problem = "settings"


class InvalidParametersError(PayChargeError, ValueError):
    """Input breaks a rule of the spec; raised before any HTTP request is sent."""

    outcome = "refused"

    default_message = gettext_noop(
        "The request breaks a rule of the payment service; nothing was sent."
    )


class NetworkError(PayChargeError):
    """The gateway could not be reached, or did not answer in time."""

    default_message = gettext_noop("The payment service could not be reached; try again later.")


class NotSentError(NetworkError):
    """The request provably never left: the connection was refused, the gateway's name
    did not resolve, the TLS handshake failed, or connecting timed out.

    Nothing reached the gateway, so nothing was done: safe to send again. Never
    raised when an earlier attempt of the same call may have reached the gateway.
    """

    default_message = gettext_noop(
        "The payment service could not be reached; nothing was sent. Try again later."
    )
    outcome = "not_sent"
    owner_problem = "unreachable"


class InvalidResponseError(PayChargeError):
    """A 2xx answer whose body is not the JSON it should be."""

    default_message = gettext_noop("The payment service sent an answer that could not be read.")


class APIError(PayChargeError):
    """The gateway answered with a non-2xx status; ``code`` is the gateway's error code."""

    #: True when trying again cannot help, whatever the status says.
    permanent = False


class BadRequestError(APIError):
    """400: the gateway rejected the request as invalid (``errors`` names the fields)."""

    default_message = gettext_noop("The payment service rejected the request as invalid.")


class PaymentDetailsRejectedError(BadRequestError):
    """The gateway refused the customer's payment details (token expired or used, card
    locked, test card in live mode...): the customer must check them or pay another way."""

    default_message = gettext_noop("The payment details were not accepted.")


class RefundExceedsChargeError(BadRequestError):
    """A refund above what the charge has left: one refund above the charge
    (``REFUND_EXCEEDS_CHARGE_AMOUNT``), or partial refunds adding up beyond it
    (``REFUND_NOT_WITHIN_BOUNDS``). The same meaning, whichever code the gateway sends."""

    default_message = gettext_noop("The refund exceeds what is left to refund on the charge.")


class AuthenticationError(APIError):
    """401: the app token's secret or JWT was not accepted: the owner's settings, never the
    customer's doing (``outcome == "not_sent"``: nothing was processed)."""

    default_message = gettext_noop(
        "The payment service rejected the credentials: check PAYCHARGE['SECRET'] and "
        "PAYCHARGE['JWT']."
    )
    outcome = "not_sent"
    owner_problem = "credentials"


class PermissionDeniedError(APIError):
    """403: the app token may not do this (a store token reaches one store): the owner's
    settings (``outcome == "not_sent"``)."""

    default_message = gettext_noop("The app token is not allowed to do this.")
    outcome = "not_sent"
    owner_problem = "permissions"


class NotFoundError(APIError):
    """404: the gateway has no such resource (or not for these credentials)."""

    default_message = gettext_noop("The payment service has no such resource.")


class StoreNotFoundError(NotFoundError):
    """404 naming the store (``storeId``): the gateway knows no store with the id the shop
    uses (``PAYCHARGE["STORE_ID"]``, or a charge's store): the owner's settings."""

    default_message = gettext_noop(
        "The payment service has no such store: check PAYCHARGE['STORE_ID'] and the app token."
    )
    outcome = "not_sent"
    owner_problem = "store"


class ConflictError(APIError):
    """409: the request conflicts with the resource's state or an idempotency key."""

    default_message = gettext_noop("The request conflicts with the current state of the resource.")


class IdempotencyKeyConflictError(ConflictError):
    """409 ``IDEMPOTENCY_KEY_CONFLICT``: the key was used before for a different request."""

    default_message = gettext_noop(
        "The idempotency key was already used for a different request; use a new key."
    )


class WebhookURLExistsError(ConflictError):
    """409 ``WEBHOOK_URL_EXISTS``: a webhook with this URL is already registered."""

    default_message = gettext_noop("A webhook with this URL is already registered.")


class UnsupportedByGatewayError(APIError):
    """The connected payment system does not support this request (``NOT_SUPPORTED_BY_PROCESSOR``,
    504 ``NO_GATEWAY_AVAILABLE_TO_PROCESS_THE_REQUEST``); not retried."""

    default_message = gettext_noop("The payment system does not support this request.")
    permanent = True


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


#: Codes of the gateway's documented error table whose meaning differs from their
#: status's (a 403 ``CARD_LOCKED`` is the customer's card, not our app token), or
#: that a caller must tell apart from others of the same status.
PAYMENT_DETAILS_CODES = frozenset(
    {
        "CARD_BRAND_NOT_SUPPORTED",
        "CARD_COUNTRY_NOT_SUPPORTED",
        "CARD_LOCKED",
        "CHARGE_TOO_QUICK",
        "CVV_AUTHORIZATION_NOT_COMPLETED",
        "CVV_REQUIRED",
        "FORBIDDEN_IP",
        "INVALID_TOKEN_TYPE",
        "LAST_NAME_REQUIRED",
        "NO_TEST_CARD_IN_LIVE_MODE",
        "NON_SUBSCRIPTION_PAYMENT",
        "NOT_ONE_TIME_TOKEN",
        "PROCESSING_MODE_MISMATCH",
        "RECURRING_TOKEN_DISABLED",
        "TRANSACTION_ALREADY_PROCESSED",
        "TRANSACTION_TOKEN_EXPIRED",
    }
)
_CODE_CLASSES: dict[str, type[APIError]] = {
    **dict.fromkeys(PAYMENT_DETAILS_CODES, PaymentDetailsRejectedError),
    "REFUND_EXCEEDS_CHARGE_AMOUNT": RefundExceedsChargeError,
    "REFUND_NOT_WITHIN_BOUNDS": RefundExceedsChargeError,
    "IDEMPOTENCY_KEY_CONFLICT": IdempotencyKeyConflictError,
    "WEBHOOK_URL_EXISTS": WebhookURLExistsError,
    "NOT_SUPPORTED_BY_PROCESSOR": UnsupportedByGatewayError,
    "NO_GATEWAY_AVAILABLE_TO_PROCESS_THE_REQUEST": UnsupportedByGatewayError,
}


def error_class_for_status(status: int) -> type[APIError]:
    """The exception class for an HTTP status of a failed answer."""
    if status >= 500:
        return ServerError
    return _STATUS_CLASSES.get(status, APIError)


#: The field names with which a 404 says that the store itself is unknown.
STORE_FIELDS = frozenset({"storeId", "store_id"})


def error_class_for(status: int, code: str | None, fields: Sequence[str] = ()) -> type[APIError]:
    """The exception class for a failed answer: by its code where the code's meaning
    differs from the status's, by its status otherwise. ``fields``: the field names of
    its ``errors`` (a 404 that names the store is :class:`StoreNotFoundError`)."""
    if status == 404 and STORE_FIELDS.intersection(fields):
        return StoreNotFoundError
    by_code = _CODE_CLASSES.get(code or "")
    # A 5xx keeps its retryable ServerError unless the code says retrying cannot help.
    if by_code is not None and (status < 500 or by_code.permanent):
        return by_code
    return error_class_for_status(status)


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


class SubscriptionStateError(ServiceError):
    """The subscription's status does not allow the change: refused before anything was sent.

    ``status`` is the subscription's status (just read), ``code`` the refusal the
    gateway's SDKs name for it (``SUBSCRIPTION_ALREADY_ENDED``, ``CANNOT_CHANGE_TOKEN``...).
    """

    default_message = gettext_noop("The subscription is not in a status that allows this change.")

    def __init__(self, message: str | None = None, *, status: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.status = status


class SavedCardError(ServiceError):
    """What the mirror knows of a saved card's transaction token says the gateway would refuse
    this charge: refused before anything was kept or sent (``outcome == "refused"``).

    ``code`` is the gateway's code for it (:mod:`django_paycharge.client.token_vocabulary`):
    ``TRANSACTION_TOKEN_IS_NOT_RECURRING``, ``NON_SUBSCRIPTION_PAYMENT``,
    ``RECURRING_TOKEN_DISABLED`` (deleted) or ``CVV_AUTHORIZATION_NOT_COMPLETED`` (ask the
    customer for the card's security code first).
    """

    default_message = gettext_noop("This saved card cannot be charged.")
    outcome = "refused"


class SyncInProgressError(ServiceError):
    """Another sync of the same account is running; ``holder`` says where, when known."""

    default_message = gettext_noop(
        "Another sync of this account is running; try again when it has finished."
    )

    def __init__(self, message: str | None = None, *, holder: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.holder = holder


class IdempotencyKeyReusedError(ServiceError):
    """The caller's idempotency key already belongs to a different charge request.

    Nothing was sent for this call; the request that owns the key is unaffected
    (two tabs paying one order: the second one gets this error).
    """

    default_message = gettext_noop(
        "This idempotency key was already used for a different charge request; "
        "use a new key for a new charge."
    )
    outcome = "refused"


class ChargeBusyError(ServiceError):
    """Another capture, cancel or refund of the charge is being sent right now; nothing was sent.

    Try again once that one has ended (it ends, or is looked for, within
    ``CREATE_SETTLE_SECONDS``, or by ``paycharge_recover``).
    """

    default_message = gettext_noop(
        "Another capture, cancel or refund of this charge is being made: "
        "wait for its outcome, then try again."
    )


class OutcomeUnknownError(ServiceError):
    """The gateway never said whether it did the work, so the request was abandoned.

    Abandoned means it is never sent again: no later recovery can do it twice.
    The gateway may still have done it: do not ask again with a new key; the
    request is being looked for (reads only) and its outcome recorded.
    ``idempotency_key`` is the request's key. Not a refusal: ``outcome`` is
    ``"unknown"``.
    """

    default_message = gettext_noop(
        "The payment service has not answered; do not try again: it is being checked."
    )
    outcome = "unknown"

    def __init__(
        self, message: str | None = None, *, idempotency_key: str | None = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        self.idempotency_key = idempotency_key


class ChargeOutcomeUnknownError(OutcomeUnknownError):
    """A create the gateway never answered for sure (see :class:`OutcomeUnknownError`).

    The gateway may still have created the charge: do not retry with a new
    token; check again (:func:`services.check_charge_request`), and pay again
    only when the check says nothing was charged.
    """

    default_message = gettext_noop(
        "We could not confirm whether the payment was taken. Do not pay again with "
        "another card or token: check again in a few minutes."
    )


#: What staff and callers are told when a capture, cancel, refund or update went unanswered.
UNKNOWN_ACTION_MESSAGES = {
    "capture": gettext_noop(
        "The payment service has not answered this capture; do not capture again: "
        "it is being checked."
    ),
    "cancel": gettext_noop(
        "The payment service has not answered this cancel; do not cancel again: "
        "it is being checked."
    ),
    "refund": gettext_noop(
        "The payment service has not answered this refund; do not refund again: "
        "it is being checked. Its amount stays reserved until then."
    ),
    "update": gettext_noop(
        "The payment service has not answered this update; it is being checked."
    ),
}


class ActionOutcomeUnknownError(OutcomeUnknownError):
    """A capture, cancel, refund or metadata update the gateway never answered for sure.

    ``kind`` says which. A refund's amount stays reserved (not available to
    refund again) until the refund is found or known never to have happened.
    """

    def __init__(self, message: str | None = None, *, kind: str = "", **kw: Any) -> None:
        super().__init__(message or UNKNOWN_ACTION_MESSAGES.get(kind), **kw)
        self.kind = kind


class RequestAbandonedError(ServiceError):
    """The request with this key was abandoned and nothing came of it: use a new key.

    Raised when a caller asks again with the key of a request whose outcome has
    since been settled as "nothing done". Asking again, with a new key, is safe.
    """

    default_message = gettext_noop(
        "This request was abandoned and nothing was done. Send it again with a new idempotency key."
    )
    outcome = "refused"


class ChargeRequestAbandonedError(RequestAbandonedError):
    """The charge request with this key was abandoned and nothing was charged: use a new key.

    Raised when a caller asks again with the key of a request whose outcome has
    since been settled as "not charged" (see :func:`services.check_charge_request`).
    Paying again, with a new key, is safe.
    """

    default_message = gettext_noop(
        "This payment attempt was abandoned and nothing was charged. "
        "Pay again with a new idempotency key."
    )
