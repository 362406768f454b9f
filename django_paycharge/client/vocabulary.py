"""The gateway's vocabulary: its statuses, modes, triggers and field names, defined once.

Plain constants and small functions, no Django: the client, the models, the
services, the admin, the API and the fake gateway all import them from here,
so a value the gateway adds (or a rule about one) changes in one place.
Values come from the spec and the gateway's official SDKs. Statuses, modes
and the rest stay plain ``str`` everywhere: a value missing from these lists
is kept as sent, never refused on reading.
"""

from __future__ import annotations

from .token_vocabulary import TOKEN_ERROR_CODES, TOKEN_EVENTS

# --- Charges -----------------------------------------------------------------

#: Every charge status the gateway documents, in the order a charge moves through them.
CHARGE_STATUSES = (
    "pending",
    "awaiting",
    "authorized",
    "successful",
    "failed",
    "error",
    "canceled",
)
#: A charge in one of these statuses will not change again (except by a refund or cancel).
FINAL_STATUSES = frozenset({"successful", "failed", "error", "canceled"})
#: Final statuses in which the customer paid nothing.
UNPAID_FINAL_STATUSES = frozenset({"failed", "error", "canceled"})
#: Statuses in which the gateway may accept a cancel (it decides the rest: a paid
#: konbini or bank transfer, or a refunded card payment, cannot be canceled).
CANCELABLE_STATUSES = frozenset({"pending", "awaiting", "authorized", "successful"})

# A status may only move to one of equal or higher rank, so a stale read never
# takes a charge backwards. An unknown status ranks between waiting and final:
# it replaces a waiting state but never a final one.
_WAITING_RANKS = {"pending": 0, "awaiting": 1, "authorized": 2}
UNKNOWN_STATUS_RANK = 2
#: The rank of every final status: no read replaces a row at this rank with a lower one.
FINAL_RANK = 3
#: ``canceled`` may follow ``successful`` (a cancel voids a captured payment): it ranks
#: above the other final statuses, so a stale read of the paid charge never undoes it.
CANCELED_RANK = FINAL_RANK + 1


def status_rank(status: str | None) -> int:
    """The rank of a charge ``status``; a missing status ranks lowest, so any known one wins."""
    if not status:
        return 0
    if status == "canceled":
        return CANCELED_RANK
    if status in FINAL_STATUSES:
        return FINAL_RANK
    return _WAITING_RANKS.get(status, UNKNOWN_STATUS_RANK)


#: A charge's mode: real money, or the gateway's test environment.
MODES = ("live", "test")
#: Payment types of a transaction token (and so of its charges).
PAYMENT_TYPES = ("card", "konbini", "bank_transfer", "online")
#: Payment types the gateway refuses to refund (SDK: "Konbini and bank transfer charges
#: cannot be refunded").
NON_REFUNDABLE_PAYMENT_TYPES = frozenset({"konbini", "bank_transfer"})
#: How an issuer token is used: a browser GET or POST, the provider's SDK, its web
#: environment or a native app.
CALL_METHODS = ("http_get", "http_post", "sdk", "web", "app")
#: ``three_ds.mode`` values a charge may be created with: the spec's four plus the two
#: newer API versions accept (gateway facts).
THREE_DS_MODES = frozenset({"normal", "require", "force", "skip", "if_available", "provided"})

#: The fields of a charge the mirror keeps in columns, in the gateway's order (its
#: ``id`` is the mirror's ``gateway_id``; ``payment_type`` comes from the charge's token).
CHARGE_FIELDS = (
    "store_id",
    "transaction_token_id",
    "transaction_token_type",
    "subscription_id",
    "merchant_transaction_id",
    "requested_amount",
    "requested_currency",
    "requested_amount_formatted",
    "charged_amount",
    "charged_currency",
    "charged_amount_formatted",
    "fee_amount",
    "fee_currency",
    "fee_amount_formatted",
    "only_direct_currency",
    "capture_at",
    "descriptor",
    "descriptor_phone_number",
    "status",
    "error",
    "metadata",
    "mode",
    "created_on",
    "redirect",
    "merchant_name",
    "store_name",
    "three_ds",
)

#: Fields only a list's items carry (the Node SDK's ``WithStoreMerchantName``); a
#: single charge (create, read, update, webhook) does not.
LISTED_ONLY_CHARGE_FIELDS = ("merchant_name", "store_name")

#: The order a list is read in, from its cursor.
CURSOR_DIRECTIONS = ("asc", "desc")

# --- Refunds and cancels -----------------------------------------------------

#: Statuses of a refund and of a cancel (the same four in the SDK).
REFUND_STATUSES = ("pending", "successful", "failed", "error")
CANCEL_STATUSES = REFUND_STATUSES
#: A refund or cancel in one of these statuses will not change again.
FINAL_OPERATION_STATUSES = frozenset({"successful", "failed", "error"})
#: Reasons a merchant may send when refunding.
REFUND_REASONS = ("duplicate", "fraud", "customer_request")
#: Reasons the gateway may report on a refund (the merchant's three plus its own).
REPORTED_REFUND_REASONS = (
    *REFUND_REASONS,
    "system_failure",
    "chargeback",
    "chargeback_fee_exempt",
    "chargeback_reverse",
)


def operation_rank(status: str | None) -> int:
    """Order of refund and cancel statuses: a stale read never takes one backwards."""
    if status in FINAL_OPERATION_STATUSES:
        return 2
    return 0 if status == "pending" else 1


# --- Error codes ---------------------------------------------------------------
# From the official SDKs: the documented error table (status and code) of the
# client SDKs' ``ApiErrorException`` and the Node SDK's ``ResponseErrorCode``.
# The app reads them; the fake gateway answers with them.

#: The gateway's default code for each failed status (the documented table; 404 and
#: 502 are not in it, and take the codes the Node SDK assumes for them).
STATUS_ERROR_CODES: dict[int, str] = {
    400: "VALIDATION_ERROR",
    401: "INVALID_CREDENTIALS",
    403: "INVALID_PERMISSIONS",
    404: "NOT_FOUND",
    409: "CONFLICTED",
    415: "VALIDATION_ERROR",
    429: "TOO_MANY_REQUESTS",
    500: "UNKNOWN_ERROR",
    502: "TIMEOUT",
    503: "SERVICE_UNAVAILABLE_TRY_AGAIN",
    504: "TIMEOUT",
}
VALIDATION_ERROR = "VALIDATION_ERROR"
NOT_FOUND = "NOT_FOUND"
#: 409: the first request with this key is still running (not documented in the
#: table; the gateway's idempotency answers, see the gateway facts).
IDEMPOTENCY_KEY_IN_PROGRESS = "IDEMPOTENCY_KEY_IN_PROGRESS"
#: 409: the key was used before for a different request.
IDEMPOTENCY_KEY_CONFLICT = "IDEMPOTENCY_KEY_CONFLICT"
#: A ``reason`` of the Node SDK's validation answers: the charge's status forbids it.
INVALID_CHARGE_STATUS = "INVALID_CHARGE_STATUS"

# A charge's later life: every one of these is answered with HTTP 400.
#: Capture of a charge already captured, or whose authorization is not complete.
ALREADY_CAPTURED = "ALREADY_CAPTURED"
#: Capture of more than the authorized amount.
CAPTURE_AMOUNT_TOO_LARGE = "CAPTURE_AMOUNT_TOO_LARGE"
PARTIAL_CAPTURE_NOT_SUPPORTED = "PARTIAL_CAPTURE_NOT_SUPPORTED"
#: Cancel of a charge its payment method or its status does not let be canceled.
CANCEL_NOT_ALLOWED = "CANCEL_NOT_ALLOWED"
#: Refund of a charge that is not ``successful``.
CANNOT_REFUND_UNSUCCESSFUL_CHARGE = "CANNOT_REFUND_UNSUCCESSFUL_CHARGE"
#: Refund (or capture) in a currency other than the charge's.
CURRENCY_MUST_MATCH_CHARGE = "CURRENCY_MUST_MATCH_CHARGE"
#: One refund of more than the charge (``exceptions.RefundExceedsChargeError``).
REFUND_EXCEEDS_CHARGE_AMOUNT = "REFUND_EXCEEDS_CHARGE_AMOUNT"
#: Partial refunds that together exceed the charge (the same exception).
REFUND_NOT_WITHIN_BOUNDS = "REFUND_NOT_WITHIN_BOUNDS"
#: Refund of a payment method that has none (konbini, bank transfer), or declined.
REFUND_NOT_ALLOWED = "REFUND_NOT_ALLOWED"
PARTIAL_REFUND_NOT_SUPPORTED = "PARTIAL_REFUND_NOT_SUPPORTED"

#: Every lifecycle refusal above.
LIFECYCLE_ERROR_CODES = frozenset(
    {
        ALREADY_CAPTURED,
        CAPTURE_AMOUNT_TOO_LARGE,
        PARTIAL_CAPTURE_NOT_SUPPORTED,
        CANCEL_NOT_ALLOWED,
        CANNOT_REFUND_UNSUCCESSFUL_CHARGE,
        CURRENCY_MUST_MATCH_CHARGE,
        REFUND_EXCEEDS_CHARGE_AMOUNT,
        REFUND_NOT_WITHIN_BOUNDS,
        REFUND_NOT_ALLOWED,
        PARTIAL_REFUND_NOT_SUPPORTED,
    }
)

# A subscription's changes (univapay-php-sdk ``Enums/Reason.php``, univapay-node
# ``errors/APIError.ts``); which status refuses which change is in
# :mod:`.subscription_vocabulary`. The fake answers them with HTTP 400.
#: Cancel of a subscription already canceled or completed.
SUBSCRIPTION_ALREADY_ENDED = "SUBSCRIPTION_ALREADY_ENDED"
#: Any change of a canceled subscription.
CANNOT_CHANGE_CANCELED_SUBSCRIPTION = "CANNOT_CHANGE_CANCELED_SUBSCRIPTION"
#: A new card (transaction token) outside unconfirmed, unpaid, current and suspended.
CANNOT_CHANGE_TOKEN = "CANNOT_CHANGE_TOKEN"  # noqa: S105 (an error code)
#: A new period once the subscription has started.
CANNOT_SET_AFTER_SUBSCRIPTION_STARTED = "CANNOT_SET_AFTER_SUBSCRIPTION_STARTED"
#: A new installment or subscription plan once the subscription has started.
PLAN_ALREADY_SET = "PLAN_ALREADY_SET"
#: A status change (suspend, resume) the current status does not allow (a field's reason).
FORBIDDEN_PARAMETER = "FORBIDDEN_PARAMETER"
#: A subscription created with a token that is not of type ``subscription``.
NOT_SUBSCRIPTION_TOKEN = "NOT_SUBSCRIPTION_TOKEN"  # noqa: S105 (an error code)
#: A subscription (or its new card) with a token whose payment type cannot pay one (a bank
#: transfer, an online wallet: only card, konbini and apple_pay can).
UNSUPPORTED_PAYMENT_TYPE = "UNSUPPORTED_PAYMENT_TYPE"

#: Every subscription refusal above.
SUBSCRIPTION_ERROR_CODES = frozenset(
    {
        SUBSCRIPTION_ALREADY_ENDED,
        CANNOT_CHANGE_CANCELED_SUBSCRIPTION,
        CANNOT_CHANGE_TOKEN,
        CANNOT_SET_AFTER_SUBSCRIPTION_STARTED,
        PLAN_ALREADY_SET,
        FORBIDDEN_PARAMETER,
        NOT_SUBSCRIPTION_TOKEN,
        UNSUPPORTED_PAYMENT_TYPE,
    }
)

#: Every error code named above: the ones a metric label may hold (others: ``other``).
ERROR_CODES = frozenset(
    {
        *STATUS_ERROR_CODES.values(),
        VALIDATION_ERROR,
        NOT_FOUND,
        IDEMPOTENCY_KEY_IN_PROGRESS,
        IDEMPOTENCY_KEY_CONFLICT,
        INVALID_CHARGE_STATUS,
        *LIFECYCLE_ERROR_CODES,
        *SUBSCRIPTION_ERROR_CODES,
        *TOKEN_ERROR_CODES,
    }
)

# --- Webhooks ----------------------------------------------------------------

#: Every trigger a webhook configuration may subscribe to; a delivery's ``event`` is one.
TRIGGERS = (
    "charge_updated",
    "charge_finished",
    "refund_finished",
    "cancel_finished",
    *TOKEN_EVENTS,
    "bank_transfer_status_updated",
    "subscription_created",
    "subscription_payment",
    "subscription_completed",
    "subscription_failure",
    "subscription_canceled",
    "subscription_suspended",
)
#: The trigger the mirror relies on: it says a charge reached a final status.
REQUIRED_TRIGGER = "charge_finished"
#: Triggers about refunds and cancels; their ``data`` is the refund or cancel.
REFUND_EVENT = "refund_finished"
CANCEL_EVENT = "cancel_finished"

__all__ = [
    "ALREADY_CAPTURED",
    "CALL_METHODS",
    "CANCELABLE_STATUSES",
    "CANCELED_RANK",
    "CANCEL_EVENT",
    "CANCEL_NOT_ALLOWED",
    "CANCEL_STATUSES",
    "CANNOT_CHANGE_CANCELED_SUBSCRIPTION",
    "CANNOT_CHANGE_TOKEN",
    "CANNOT_REFUND_UNSUCCESSFUL_CHARGE",
    "CANNOT_SET_AFTER_SUBSCRIPTION_STARTED",
    "CAPTURE_AMOUNT_TOO_LARGE",
    "CHARGE_FIELDS",
    "CHARGE_STATUSES",
    "CURRENCY_MUST_MATCH_CHARGE",
    "CURSOR_DIRECTIONS",
    "ERROR_CODES",
    "FINAL_OPERATION_STATUSES",
    "FINAL_RANK",
    "FINAL_STATUSES",
    "FORBIDDEN_PARAMETER",
    "IDEMPOTENCY_KEY_CONFLICT",
    "IDEMPOTENCY_KEY_IN_PROGRESS",
    "INVALID_CHARGE_STATUS",
    "LIFECYCLE_ERROR_CODES",
    "LISTED_ONLY_CHARGE_FIELDS",
    "MODES",
    "NON_REFUNDABLE_PAYMENT_TYPES",
    "NOT_FOUND",
    "NOT_SUBSCRIPTION_TOKEN",
    "PARTIAL_CAPTURE_NOT_SUPPORTED",
    "PARTIAL_REFUND_NOT_SUPPORTED",
    "PAYMENT_TYPES",
    "PLAN_ALREADY_SET",
    "REFUND_EVENT",
    "REFUND_EXCEEDS_CHARGE_AMOUNT",
    "REFUND_NOT_ALLOWED",
    "REFUND_NOT_WITHIN_BOUNDS",
    "REFUND_REASONS",
    "REFUND_STATUSES",
    "REPORTED_REFUND_REASONS",
    "REQUIRED_TRIGGER",
    "STATUS_ERROR_CODES",
    "SUBSCRIPTION_ALREADY_ENDED",
    "SUBSCRIPTION_ERROR_CODES",
    "THREE_DS_MODES",
    "TRIGGERS",
    "UNKNOWN_STATUS_RANK",
    "UNPAID_FINAL_STATUSES",
    "UNSUPPORTED_PAYMENT_TYPE",
    "VALIDATION_ERROR",
    "operation_rank",
    "status_rank",
]
