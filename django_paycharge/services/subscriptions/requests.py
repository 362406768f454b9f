"""Subscription requests committed before anything is sent, then sent by the one machine.

As for a charge's refunds and captures (:mod:`..lifecycle.requests`): the request with
the caller's key is found again (the same key and arguments give the same result, other
arguments are refused), or a new one is committed already counted as sent, and
:func:`..lifecycle.send` sends it with its key. A crash in between leaves it for
``paycharge_recover``.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, router
from django.utils import timezone
from django.utils.translation import gettext

from ...client.validation import validate_idempotency_key
from ...exceptions import IdempotencyKeyReusedError
from ...models import RequestState, Subscription, SubscriptionRequest
from ..lifecycle import answer, send
from ..retry import retry_transient
from .kinds import SubscriptionKind


def checked_key(idempotency_key: uuid.UUID | str | None) -> str | None:
    """The caller's key, checked before anything is kept (it travels in a header)."""
    return None if idempotency_key is None else validate_idempotency_key(idempotency_key)


def existing_request(
    kind: SubscriptionKind, key: str | None, params: dict[str, Any], subscription: Any
) -> SubscriptionRequest | None:
    """The request already made with ``key``, if any; refused if it was another request."""
    if key is None:
        return None
    found = SubscriptionRequest.objects.select_related("subscription")
    existing = found.filter(idempotency_key=key).first()
    if existing is not None:
        _refuse_other(existing, kind, params, subscription)
    return existing


def open_and_send(
    kind: SubscriptionKind,
    *,
    account: str,
    params: dict[str, Any],
    key: str | None,
    requested_by: str,
    subscription: Subscription | None = None,
) -> Subscription:
    """Commit a new request for ``key`` (or join the one a concurrent call made) and send it
    through the machine; what it made or changed, or the error it ended with."""
    text_key = key or str(uuid.uuid4())

    def open_or_join() -> tuple[SubscriptionRequest, bool]:
        existing = existing_request(kind, key, params, subscription)
        if existing is not None:
            return existing, False
        made = SubscriptionRequest.objects.create(
            kind=kind.name,
            idempotency_key=text_key,
            account=account,
            params=params,
            subscription=subscription,
            requested_by=requested_by[:150],
            state=RequestState.UNKNOWN,
            attempts=1,
            sent_at=timezone.now(),
        )
        return made, True

    alias = router.db_for_write(SubscriptionRequest)
    try:
        request, new = retry_transient(open_or_join, using=alias, durable=True)
    except IntegrityError:  # the same key, committed a moment ago by a concurrent call
        request = SubscriptionRequest.objects.get(idempotency_key=text_key)
        _refuse_other(request, kind, params, subscription)
        new = False
    result: Subscription = send(kind, request, recorded=True) if new else answer(kind, request)
    return result


def _refuse_other(
    existing: SubscriptionRequest,
    kind: SubscriptionKind,
    params: dict[str, Any],
    subscription: Subscription | None,
) -> None:
    same_target = subscription is None or existing.subscription_id == subscription.pk
    if existing.kind != kind.name or existing.params != params or not same_target:
        raise IdempotencyKeyReusedError(
            gettext(
                "This idempotency key was already used for a different request; "
                "use a new key for a new subscription or change."
            )
        )
