"""The gateway's vocabulary of transaction tokens: types, usage limits, CVV authorization, events.

Read from the official SDKs: univapay-node ``src/resources/TransactionTokens.ts``
(``TransactionTokenType``, ``UsageLimit``, ``CvvAuthorizedStatus``, the routes),
``src/resources/WebHooks.ts`` (the token triggers) and ``src/errors/APIError.ts`` (the
codes); univapay-php-sdk ``Resources/TransactionToken.php`` (``validateCreateCharge``:
a subscription token is not charged directly, and a card token whose CVV authorization
is enabled is charged only once it is ``current``); univapay-java-sdk's recorded bodies
(``responses/transactiontoken/get-card-cvv-auth-*.json``: ``data.cvv_authorize``).
The services refuse locally with :func:`charge_refusal` before sending anything, and
the fake gateway answers with the same codes. Values stay plain ``str``.
"""

from __future__ import annotations

#: A token paying a subscription: the gateway charges it, never the shop directly.
SUBSCRIPTION_TOKEN_TYPE = "subscription"  # noqa: S105 (a token type, not a secret)
#: A token's ``type``: charged once, paying a subscription, or charged by the merchant later.
TOKEN_TYPES = ("one_time", "subscription", "recurring")
#: The type of a saved card: the merchant charges it later, without the customer.
RECURRING_TOKEN_TYPE = "recurring"  # noqa: S105 (a token type, not a secret)
#: A recurring token's ``usage_limit``: at most one charge per that period (Node ``UsageLimit``).
USAGE_LIMITS = ("daily", "weekly", "monthly", "annually")
#: ``data.cvv_authorize.status`` (Node ``CvvAuthorizedStatus``; Java adds ``error``).
CVV_AUTHORIZE_STATUSES = ("pending", "failed", "current", "inactive", "error")
#: The only CVV authorization status in which a token that needs one may be charged.
CVV_AUTHORIZED = "current"

#: Webhook triggers about a transaction token; their ``data`` is the token (Node ``WebHookTrigger``;
#: ``token_replaced`` also follows a renewal: the new token, naming the old as ``previous_id``).
TOKEN_EVENTS = (
    "token_created",
    "token_updated",
    "token_replaced",
    "token_cvv_auth_updated",
    "token_cvv_auth_check_updated",
    "token_three_ds_updated",
    "recurring_token_deleted",
)
TOKEN_REPLACED = "token_replaced"  # noqa: S105 (an event name)
RECURRING_TOKEN_DELETED = "recurring_token_deleted"  # noqa: S105 (an event name)

# Error codes (univapay-node ``ResponseErrorCode``, univapay-php-sdk ``Reason``); the fake
# answers each with HTTP 400.
#: A charge on a card token whose CVV authorization is enabled but not ``current``.
CVV_AUTHORIZATION_NOT_COMPLETED = "CVV_AUTHORIZATION_NOT_COMPLETED"
#: A charge on a recurring card token when the store asks the card's security code again for
#: such charges (its ``card_charge_cvv_confirmation``) and none was given since the last one:
#: the customer enters it (a ``PATCH`` of the token's ``data.cvv``, which the browser's app
#: token may send), then the charge is made again (univapay-client-sdk's update request).
RECURRING_USAGE_REQUIRES_CVV = "RECURRING_USAGE_REQUIRES_CVV"
#: A merchant's charge on a token that is not recurring (PHP's ``Reason``).
TRANSACTION_TOKEN_IS_NOT_RECURRING = "TRANSACTION_TOKEN_IS_NOT_RECURRING"  # noqa: S105
#: A direct charge on a token of type ``subscription`` (PHP ``validateCreateCharge``).
NON_SUBSCRIPTION_PAYMENT = "NON_SUBSCRIPTION_PAYMENT"
#: A charge on a recurring token that was deleted (deactivated).
RECURRING_TOKEN_DISABLED = "RECURRING_TOKEN_DISABLED"  # noqa: S105
#: A recurring token charged again within its ``usage_limit`` period. The SDKs name no
#: code for exactly this; ``CHARGE_TOO_QUICK`` is the one of theirs that says it.
USAGE_LIMIT_REACHED = "CHARGE_TOO_QUICK"
#: A ``usage_limit`` given to a token that is not recurring.
USAGE_LIMIT_NOT_APPLICABLE = "USAGE_LIMIT_NOT_APPLICABLE"

#: Every token refusal above.
TOKEN_ERROR_CODES = frozenset(
    {
        CVV_AUTHORIZATION_NOT_COMPLETED,
        RECURRING_USAGE_REQUIRES_CVV,
        TRANSACTION_TOKEN_IS_NOT_RECURRING,
        NON_SUBSCRIPTION_PAYMENT,
        RECURRING_TOKEN_DISABLED,
        USAGE_LIMIT_REACHED,
        USAGE_LIMIT_NOT_APPLICABLE,
    }
)


def charge_refusal(
    token_type: str | None,
    *,
    active: bool | None = None,
    cvv_enabled: bool | None = None,
    cvv_status: str | None = None,
    merchant_charge: bool = False,
) -> str | None:
    """The code the gateway refuses a charge on a token with, from what is known of it, or None.

    Unknown values (``None``, a type the gateway added later) are never refused here: the
    gateway decides. ``merchant_charge``: the shop charges a saved card on its own (the
    token must be recurring).
    """
    if token_type == SUBSCRIPTION_TOKEN_TYPE:
        return NON_SUBSCRIPTION_PAYMENT
    if merchant_charge and token_type in TOKEN_TYPES and token_type != RECURRING_TOKEN_TYPE:
        return TRANSACTION_TOKEN_IS_NOT_RECURRING
    if active is False and token_type == RECURRING_TOKEN_TYPE:
        return RECURRING_TOKEN_DISABLED
    if cvv_enabled and cvv_status is not None and cvv_status != CVV_AUTHORIZED:
        return CVV_AUTHORIZATION_NOT_COMPLETED
    return None


__all__ = [
    "CVV_AUTHORIZATION_NOT_COMPLETED",
    "CVV_AUTHORIZED",
    "CVV_AUTHORIZE_STATUSES",
    "NON_SUBSCRIPTION_PAYMENT",
    "RECURRING_TOKEN_DELETED",
    "RECURRING_TOKEN_DISABLED",
    "RECURRING_TOKEN_TYPE",
    "RECURRING_USAGE_REQUIRES_CVV",
    "SUBSCRIPTION_TOKEN_TYPE",
    "TOKEN_ERROR_CODES",
    "TOKEN_EVENTS",
    "TOKEN_REPLACED",
    "TOKEN_TYPES",
    "TRANSACTION_TOKEN_IS_NOT_RECURRING",
    "USAGE_LIMITS",
    "USAGE_LIMIT_NOT_APPLICABLE",
    "USAGE_LIMIT_REACHED",
    "charge_refusal",
]
