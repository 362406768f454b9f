"""Create a subscription exactly once: checked locally, committed with its key, then sent."""

from __future__ import annotations

import uuid
from typing import Any

from ... import conf
from ...client.subscription_params import (
    SubscriptionCreateParams,
    validate_subscribable_payment_type,
)
from ...models import Subscription
from ..lifecycle import answer
from .kinds import CREATE_SUBSCRIPTION
from .requests import checked_key, existing_request, open_and_send


def create_subscription(
    params: SubscriptionCreateParams | None = None,
    /,
    *,
    idempotency_key: uuid.UUID | str | None = None,
    account: str | None = None,
    requested_by: str = "",
    payment_type: str | None = None,
    **fields: Any,
) -> Subscription:
    """Create a subscription (``params``, or its fields as keyword arguments) and mirror it.

    Every rule of :class:`~django_paycharge.client.SubscriptionCreateParams` is checked
    before anything is kept or sent. The request is committed with its key first: a lost
    answer is asked again with the same key, a crash leaves it for ``paycharge_recover``,
    and neither ever makes a second subscription. The same ``idempotency_key`` with the
    same parameters returns the same subscription. The answer is normally ``unverified``:
    the first payment follows (``subscription_created``/``subscription_payment`` webhooks,
    or :func:`~django_paycharge.services.refresh_subscription`).

    ``payment_type``: the token's, when the caller knows it (the checkout the customer paid
    on). Only card, konbini and apple_pay pay a subscription: any other is refused here
    (``InvalidParametersError`` on ``payment_type``), before anything is kept or sent.
    """
    given = params if params is not None else SubscriptionCreateParams(**fields)
    body = given.to_body()
    if payment_type is not None:
        validate_subscribable_payment_type(payment_type, "payment_type")
    key = checked_key(idempotency_key)
    existing = existing_request(CREATE_SUBSCRIPTION, key, body, None)
    if existing is not None:
        found: Subscription = answer(CREATE_SUBSCRIPTION, existing)
        return found
    return open_and_send(
        CREATE_SUBSCRIPTION,
        account=account or conf.DEFAULT_ACCOUNT,
        params=body,
        key=key,
        requested_by=requested_by,
    )
