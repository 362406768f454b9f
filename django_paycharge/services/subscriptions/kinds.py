"""The subscription kinds of the one exactly-once machine: a new subscription, and its changes.

Each says how to send its request with the row's key, how to look for its result by
reads after a lost answer, and which refusals may mean an earlier send already did it
(a suspend answered "not allowed" because our first suspend went through). Recovery
maps a stored row to its kind with :data:`KINDS`.
"""

from __future__ import annotations

from typing import Any

from ... import conf
from ...client import PayChargeClient
from ...client.params import fields_from_wire
from ...client.subscription_params import SubscriptionCreateParams
from ...client.subscription_types import Subscription as RemoteSubscription
from ...client.vocabulary import FORBIDDEN_PARAMETER, SUBSCRIPTION_ALREADY_ENDED
from ...exceptions import (
    ActionOutcomeUnknownError,
    APIError,
    PayChargeError,
    RequestAbandonedError,
)
from ...models import Subscription, SubscriptionRequest
from ..clients import get_client
from ..lifecycle import CLOCK_SLACK, succeed
from ..mirror import refresh_subscription, store_subscription

Kind = SubscriptionRequest.Kind


class SubscriptionKind:
    """What the subscription kinds share as kinds of the machine (``RequestKind``)."""

    name = ""
    nothing_done = "not_done"
    #: Refusals (codes, or a field's reason) that may say an earlier send did the work.
    done_before_codes: frozenset[str] = frozenset()

    def send(self, request: SubscriptionRequest) -> Subscription:
        raise NotImplementedError

    def find(self, request: SubscriptionRequest) -> Subscription | None:
        raise NotImplementedError

    def done_before(self, exc: APIError) -> bool:
        reasons = {e.reason for e in exc.errors} | {exc.code}
        return bool(reasons & self.done_before_codes)

    def stored(self, request: SubscriptionRequest) -> Subscription | None:
        return request.subscription

    def refusal(self, request: SubscriptionRequest, exc: PayChargeError) -> PayChargeError:
        return exc

    def unknown_error(
        self, request: SubscriptionRequest, exc: PayChargeError | None
    ) -> PayChargeError:
        return ActionOutcomeUnknownError(
            kind=self.name,
            idempotency_key=request.idempotency_key,
            request_id=exc.request_id if exc is not None else None,
        )

    def abandoned_error(self, request: SubscriptionRequest) -> PayChargeError:
        return RequestAbandonedError()

    def complete(self, request: SubscriptionRequest, subscription: Subscription) -> Subscription:
        """Mark ``request`` succeeded with the subscription it made or changed."""
        succeed(request, subscription=subscription)
        request.subscription = subscription
        return subscription


class CreateKind(SubscriptionKind):
    """``POST /subscriptions`` with the row's key; found again by its token and amounts."""

    name = Kind.CREATE

    def send(self, request: SubscriptionRequest) -> Subscription:
        params = SubscriptionCreateParams(
            **fields_from_wire(SubscriptionCreateParams, request.params)
        )
        client = get_client(request.account)
        remote = client.subscriptions.create(params, idempotency_key=request.idempotency_key)
        return self.complete(request, store_subscription(remote, account=request.account))

    def find(self, request: SubscriptionRequest) -> Subscription | None:
        """A subscription made since shortly before the request, with its token, amount and
        currency, that no other request has: stored and linked."""
        store = conf.get_account(request.account).store_id
        client = get_client(request.account)
        taken = set(
            SubscriptionRequest.objects.filter(kind=self.name, subscription__isnull=False)
            .exclude(pk=request.pk)
            .values_list("subscription__gateway_id", flat=True)
        )
        since = request.created_at - CLOCK_SLACK
        for remote in client.subscriptions.list(store):  # newest first
            if remote.created_on is not None and remote.created_on < since:
                return None
            if remote.id not in taken and _made_by(remote, request.params):
                return self.complete(request, store_subscription(remote, account=request.account))
        return None


def _made_by(remote: RemoteSubscription, params: dict[str, Any]) -> bool:
    return (
        str(remote.transaction_token_id) == params.get("transaction_token_id")
        and remote.amount == params.get("amount")
        and (remote.currency or "").upper() == params.get("currency")
    )


class ChangeKind(SubscriptionKind):
    """A change of a subscription: sent with the row's key, its answer stored."""

    #: The status that shows the change was made (None: see :meth:`shows_done`).
    done_status: frozenset[str] = frozenset()

    def call(self, client: PayChargeClient, request: SubscriptionRequest) -> Any:
        raise NotImplementedError

    def shows_done(self, subscription: Subscription, request: SubscriptionRequest) -> bool:
        return subscription.status in self.done_status

    def send(self, request: SubscriptionRequest) -> Subscription:
        subscription = request.subscription
        assert subscription is not None
        remote = self.call(get_client(request.account), request)
        if isinstance(remote, RemoteSubscription):
            stored = store_subscription(remote, account=request.account)
        else:  # a cancel answers nothing: read the subscription
            stored = _reread(subscription)
        return self.complete(request, stored)

    def find(self, request: SubscriptionRequest) -> Subscription | None:
        assert request.subscription is not None
        current = _reread(request.subscription)
        return self.complete(request, current) if self.shows_done(current, request) else None


def _reread(subscription: Subscription) -> Subscription:
    return refresh_subscription(
        subscription.gateway_id, subscription.store_id, account=subscription.account
    )


def _ids(request: SubscriptionRequest) -> tuple[Any, Any]:
    subscription = request.subscription
    assert subscription is not None
    return subscription.store_id, subscription.gateway_id


class SuspendKind(ChangeKind):
    name = Kind.SUSPEND
    done_status = frozenset({"suspended"})
    done_before_codes = frozenset({FORBIDDEN_PARAMETER})  # already suspended

    def shows_done(self, subscription: Subscription, request: SubscriptionRequest) -> bool:
        # Suspended on the next payment's day: nothing a read can show before then.
        return subscription.status in self.done_status

    def call(self, client: PayChargeClient, request: SubscriptionRequest) -> Any:
        mode = request.params.get("termination_mode")
        key = request.idempotency_key
        return client.subscriptions.suspend(
            *_ids(request), termination_mode=mode, idempotency_key=key
        )


class ResumeKind(ChangeKind):
    name = Kind.RESUME
    done_status = frozenset({"unpaid", "current"})
    done_before_codes = frozenset({FORBIDDEN_PARAMETER})  # no longer suspended

    def call(self, client: PayChargeClient, request: SubscriptionRequest) -> Any:
        key = request.idempotency_key
        return client.subscriptions.unsuspend(*_ids(request), idempotency_key=key)


class CancelKind(ChangeKind):
    name = Kind.CANCEL
    done_status = frozenset({"canceled"})
    done_before_codes = frozenset({SUBSCRIPTION_ALREADY_ENDED})  # our first DELETE did it

    def call(self, client: PayChargeClient, request: SubscriptionRequest) -> Any:
        client.subscriptions.cancel(*_ids(request), idempotency_key=request.idempotency_key)
        return None


class ChangeCardKind(ChangeKind):
    name = Kind.CHANGE_CARD

    def shows_done(self, subscription: Subscription, request: SubscriptionRequest) -> bool:
        wanted = request.params["transaction_token_id"]
        return bool(str(subscription.transaction_token_id) == wanted)

    def call(self, client: PayChargeClient, request: SubscriptionRequest) -> Any:
        token = request.params["transaction_token_id"]
        return client.subscriptions.change_token(
            *_ids(request), transaction_token_id=token, idempotency_key=request.idempotency_key
        )


class UpdateKind(ChangeKind):
    """A change of the amount, metadata, period, plan or settings (``PATCH``): done once
    the subscription shows every value asked for."""

    name = Kind.UPDATE

    def shows_done(self, subscription: Subscription, request: SubscriptionRequest) -> bool:
        shown = {
            **{name: getattr(subscription, name, None) for name in request.params},
            "termination_mode": (subscription.schedule_settings or {}).get("termination_mode"),
        }
        return all(shown[name] == value for name, value in request.params.items())

    def call(self, client: PayChargeClient, request: SubscriptionRequest) -> Any:
        return client.subscriptions.update(
            *_ids(request), idempotency_key=request.idempotency_key, **request.params
        )


CREATE_SUBSCRIPTION = CreateKind()
SUSPEND = SuspendKind()
RESUME = ResumeKind()
CANCEL_SUBSCRIPTION = CancelKind()
CHANGE_CARD = ChangeCardKind()
UPDATE_SUBSCRIPTION = UpdateKind()

#: The kind of each stored row, by its ``kind``: recovery's table for subscription rows.
_ALL = (CREATE_SUBSCRIPTION, SUSPEND, RESUME, CANCEL_SUBSCRIPTION, CHANGE_CARD, UPDATE_SUBSCRIPTION)
KINDS: dict[str, SubscriptionKind] = {kind.name: kind for kind in _ALL}
