"""Suspend, resume, cancel, change a subscription or its card: refused locally, else exactly once.

The subscription is read from the gateway first; a change its status does not allow
(the SDKs' transition table, :func:`~django_paycharge.client.subscription_vocabulary.refusal`)
is refused with :class:`~django_paycharge.exceptions.SubscriptionStateError` before any
request is kept or sent.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.utils.translation import gettext

from ...client.subscription_params import (
    SubscriptionUpdateParams,
    update_actions,
    validate_termination_mode,
)
from ...client.subscription_vocabulary import (
    CANCEL,
    CHANGE_TOKEN,
    SUSPEND,
    UNSUSPEND,
    refusal,
)
from ...client.validation import validate_uuid
from ...exceptions import SubscriptionStateError
from ...models import Subscription
from ..lifecycle import answer
from ..mirror import refresh_subscription
from .kinds import CANCEL_SUBSCRIPTION, CHANGE_CARD, RESUME, UPDATE_SUBSCRIPTION, ChangeKind
from .kinds import SUSPEND as SUSPEND_KIND
from .requests import checked_key, existing_request, open_and_send


def _change(
    kind: ChangeKind,
    actions: str | list[str],
    subscription: Subscription,
    params: dict[str, Any],
    idempotency_key: uuid.UUID | str | None,
    requested_by: str,
) -> Subscription:
    key = checked_key(idempotency_key)
    existing = existing_request(kind, key, params, subscription)
    if existing is not None:
        found: Subscription = answer(kind, existing)
        return found
    current = refresh_subscription(
        subscription.gateway_id, subscription.store_id, account=subscription.account
    )
    asked = [actions] if isinstance(actions, str) else actions
    reason = next(filter(None, (refusal(action, current.status) for action in asked)), None)
    if reason is not None:
        message = gettext("The subscription's status (%(status)s) does not allow this change.")
        # In the reader's language ("継続中"), as staff and the API's callers read it.
        status = current.get_status_display() or current.status or gettext("unknown")
        raise SubscriptionStateError(
            message % {"status": status}, status=current.status, code=reason
        )
    return open_and_send(
        kind,
        account=current.account,
        params=params,
        key=key,
        requested_by=requested_by,
        subscription=current,
    )


def suspend_subscription(
    subscription: Subscription,
    *,
    termination_mode: str | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Subscription:
    """Stop charging a ``current`` or ``unpaid`` subscription; it becomes ``suspended`` at
    once (``immediate``, the gateway's default) or on its next payment's day
    (``on_next_payment``)."""
    params: dict[str, Any] = {}
    if termination_mode is not None:
        field = "termination_mode"
        params[field] = validate_termination_mode(termination_mode, field)
    return _change(SUSPEND_KIND, SUSPEND, subscription, params, idempotency_key, requested_by)


def resume_subscription(
    subscription: Subscription,
    *,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Subscription:
    """Resume a ``suspended`` subscription; it becomes ``unpaid`` until its next payment."""
    return _change(RESUME, UNSUSPEND, subscription, {}, idempotency_key, requested_by)


def cancel_subscription(
    subscription: Subscription,
    *,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Subscription:
    """Cancel a subscription that has not ended, for good (``DELETE``: it cannot be resumed)."""
    return _change(CANCEL_SUBSCRIPTION, CANCEL, subscription, {}, idempotency_key, requested_by)


def change_subscription_card(
    subscription: Subscription,
    *,
    transaction_token_id: uuid.UUID | str,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Subscription:
    """Charge the next payments to another card (a transaction token of type ``subscription``)."""
    token = validate_uuid(transaction_token_id, "transaction_token_id")
    params = {"transaction_token_id": token}
    return _change(CHANGE_CARD, CHANGE_TOKEN, subscription, params, idempotency_key, requested_by)


def update_subscription(
    subscription: Subscription,
    *,
    amount: int | None = None,
    metadata: dict[str, Any] | None = None,
    period: str | None = None,
    cyclical_period: str | None = None,
    installment_plan: dict[str, Any] | None = None,
    subscription_plan: dict[str, Any] | None = None,
    termination_mode: str | None = None,
    only_direct_currency: bool | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Subscription:
    """Change a subscription's amount (its payments not made yet), metadata or settings at
    any time, and its period or plan before it has started (``unverified``,
    ``unconfirmed``: else ``SubscriptionStateError``, the gateway's
    ``CANNOT_SET_AFTER_SUBSCRIPTION_STARTED`` or ``PLAN_ALREADY_SET``). ``None``: not
    changed; every rule is checked before anything is kept or sent (the card, a suspension
    and a resumption have their own services)."""
    change = SubscriptionUpdateParams(
        amount=amount,
        metadata=metadata,
        period=period,
        cyclical_period=cyclical_period,
        installment_plan=installment_plan,
        subscription_plan=subscription_plan,
        termination_mode=termination_mode,
        only_direct_currency=only_direct_currency,
    )
    body = change.to_body()  # raises InvalidParametersError
    params = change.to_dict()
    return _change(
        UPDATE_SUBSCRIPTION,
        update_actions(body),
        subscription,
        params,
        idempotency_key,
        requested_by,
    )
