"""The gateway's vocabulary of subscriptions: statuses and their ranks, periods, plans, events,
and the one table of which status allows which change.

Read from the official SDKs: univapay-node ``src/resources/Subscriptions.ts`` (statuses,
periods, plan kinds, termination modes, routes) and univapay-php-sdk
``src/Univapay/Resources/Subscription.php`` (``patch``, ``cancel``, ``isEditable``,
``isTokenPatchable``, ``isTerminal``: the transitions and which reason each refusal
names). The services refuse locally with :func:`refusal` before sending anything, and
the fake gateway answers with the same codes, so the rule is written once.
Values stay plain ``str``: a status the gateway adds later is kept as sent.
"""

from __future__ import annotations

from types import MappingProxyType

from .token_vocabulary import SUBSCRIPTION_TOKEN_TYPE
from .vocabulary import (
    CANNOT_CHANGE_CANCELED_SUBSCRIPTION,
    CANNOT_CHANGE_TOKEN,
    CANNOT_SET_AFTER_SUBSCRIPTION_STARTED,
    FORBIDDEN_PARAMETER,
    PLAN_ALREADY_SET,
    SUBSCRIPTION_ALREADY_ENDED,
)

#: Every subscription status the SDKs name, in the order a subscription moves through them.
SUBSCRIPTION_STATUSES = (
    "unverified",
    "unconfirmed",
    "authorized",
    "unpaid",
    "current",
    "suspended",
    "canceled",
    "completed",
)
#: A subscription in one of these statuses never changes again (PHP ``isTerminal``).
FINAL_SUBSCRIPTION_STATUSES = frozenset({"canceled", "completed"})
#: Statuses in which the gateway charges on schedule or waits for a renewal (PHP ``isProcessing``).
RUNNING_SUBSCRIPTION_STATUSES = frozenset({"unpaid", "current", "suspended"})

# Ranks: a stale read never takes a subscription back to a lower rank. The running
# statuses share a rank (staff move current -> suspended -> unpaid -> current and back
# again); within one rank the gateway's ``updated_on`` orders reads.
_SUBSCRIPTION_RANKS = {"unverified": 0, "unconfirmed": 1, "authorized": 1}
RUNNING_SUBSCRIPTION_RANK = 2
FINAL_SUBSCRIPTION_RANK = 3


def subscription_status_rank(status: str | None) -> int:
    """The rank of a subscription ``status``; missing ranks lowest, unknown with the running."""
    if not status:
        return 0
    if status in FINAL_SUBSCRIPTION_STATUSES:
        return FINAL_SUBSCRIPTION_RANK
    return _SUBSCRIPTION_RANKS.get(status, RUNNING_SUBSCRIPTION_RANK)


#: ``period`` values (Node ``SubscriptionPeriod``; the PHP SDK lacks ``bimonthly``).
SUBSCRIPTION_PERIODS = (
    "daily",
    "weekly",
    "biweekly",
    "monthly",
    "bimonthly",
    "quarterly",
    "semiannually",
    "annually",
)
#: ``schedule_settings.termination_mode`` (Node ``TerminateMode``).
TERMINATION_MODES = ("immediate", "on_next_payment")
#: ``installment_plan.plan_type``: revolving, or a fixed number of cycles.
INSTALLMENT_PLAN_TYPES = ("revolving", "fixed_cycles")
#: ``subscription_plan.plan_type``: a fixed number of cycles, or a fixed amount per cycle.
SUBSCRIPTION_PLAN_TYPES = ("fixed_cycles", "fixed_cycle_amount")
#: Payment types a subscription may be paid with (PHP ``isSubscribable``).
SUBSCRIBABLE_PAYMENT_TYPES = frozenset({"card", "konbini", "apple_pay"})

#: Webhook triggers about a subscription; their ``data`` is the subscription.
SUBSCRIPTION_EVENTS = (
    "subscription_created",
    "subscription_payment",
    "subscription_failure",
    "subscription_canceled",
    "subscription_completed",
    "subscription_suspended",
)

#: The fields of a subscription the mirror keeps in columns (its ``id`` is ``gateway_id``).
SUBSCRIPTION_FIELDS = (
    "store_id",
    "transaction_token_id",
    "mode",
    "status",
    "amount",
    "amount_formatted",
    "amount_left",
    "amount_left_formatted",
    "initial_amount",
    "initial_amount_formatted",
    "currency",
    "payments_left",
    "cycles_left",
    "period",
    "cyclical_period",
    "descriptor",
    "only_direct_currency",
    "first_charge_authorization_only",
    "first_charge_capture_after",
    "installment_plan",
    "subscription_plan",
    "schedule_settings",
    "three_ds",
    "metadata",
    "created_on",
    "updated_on",
)

# --- Transitions -------------------------------------------------------------------

#: What staff or the shop may ask of a subscription.
SUSPEND = "suspend"
UNSUSPEND = "unsuspend"
CANCEL = "cancel"
CHANGE_TOKEN = "change_token"  # noqa: S105 (an action name)
CHANGE_PERIOD = "change_period"
CHANGE_PLAN = "change_plan"

#: Each action: the statuses that allow it, and the reason the gateway refuses it with
#: otherwise (PHP ``Subscription::patch``/``cancel``; a canceled subscription refuses every
#: change with ``CANNOT_CHANGE_CANCELED_SUBSCRIPTION`` first).
TRANSITIONS: MappingProxyType[str, tuple[frozenset[str], str]] = MappingProxyType(
    {
        SUSPEND: (frozenset({"current", "unpaid"}), FORBIDDEN_PARAMETER),
        UNSUSPEND: (frozenset({"suspended"}), FORBIDDEN_PARAMETER),
        CANCEL: (
            frozenset(SUBSCRIPTION_STATUSES) - FINAL_SUBSCRIPTION_STATUSES,
            SUBSCRIPTION_ALREADY_ENDED,
        ),
        CHANGE_TOKEN: (
            frozenset({"unconfirmed", "unpaid", "current", "suspended"}),
            CANNOT_CHANGE_TOKEN,
        ),
        CHANGE_PERIOD: (
            frozenset({"unverified", "unconfirmed"}),
            CANNOT_SET_AFTER_SUBSCRIPTION_STARTED,
        ),
        CHANGE_PLAN: (frozenset({"unverified", "unconfirmed"}), PLAN_ALREADY_SET),
    }
)
#: The status each accepted action leads to (the others keep the status, or the gateway
#: decides: a cancel ``on_next_payment`` stays running until then).
NEXT_STATUS = MappingProxyType({SUSPEND: "suspended", UNSUSPEND: "unpaid", CANCEL: "canceled"})


def refusal(action: str, status: str | None) -> str | None:
    """The reason the gateway refuses ``action`` on a subscription in ``status``, or ``None``.

    An unknown status (one the gateway added) is not refused here: the gateway decides.
    """
    allowed, reason = TRANSITIONS[action]
    if status is None or status not in SUBSCRIPTION_STATUSES or status in allowed:
        return None
    if status == "canceled" and action != CANCEL:
        return CANNOT_CHANGE_CANCELED_SUBSCRIPTION
    return reason


__all__ = [
    "CANCEL",
    "CHANGE_PERIOD",
    "CHANGE_PLAN",
    "CHANGE_TOKEN",
    "FINAL_SUBSCRIPTION_RANK",
    "FINAL_SUBSCRIPTION_STATUSES",
    "INSTALLMENT_PLAN_TYPES",
    "NEXT_STATUS",
    "RUNNING_SUBSCRIPTION_RANK",
    "RUNNING_SUBSCRIPTION_STATUSES",
    "SUBSCRIBABLE_PAYMENT_TYPES",
    "SUBSCRIPTION_EVENTS",
    "SUBSCRIPTION_FIELDS",
    "SUBSCRIPTION_PERIODS",
    "SUBSCRIPTION_PLAN_TYPES",
    "SUBSCRIPTION_STATUSES",
    "SUBSCRIPTION_TOKEN_TYPE",
    "SUSPEND",
    "TERMINATION_MODES",
    "TRANSITIONS",
    "UNSUSPEND",
    "refusal",
    "subscription_status_rank",
]
