"""``client.subscriptions``: create, read and list subscriptions; update, suspend, resume,
cancel them, change their card; read their scheduled payments and charges; simulate a plan.

Routes from the official SDKs (univapay-node ``Subscriptions.ts``, univapay-java-sdk
``SubscriptionsResource``). Every request that changes something carries an
``Idempotency-Key`` (the caller's, or a fresh UUID4), the same on every retry, as
the charge calls do. Whether a status allows a change is
:func:`~django_paycharge.client.subscription_vocabulary.refusal`'s to say; the
services ask it before calling these.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from ..paging import follow_list
from ..params import list_params
from ..parsing import page_parser, parse_charge
from ..subscription_params import (
    PlanSimulationParams,
    SubscriptionCreateParams,
    SubscriptionUpdateParams,
    token_change_body,
    validate_termination_mode,
)
from ..subscription_parsing import parse_scheduled_payment, parse_simulation, parse_subscription
from ..subscription_types import ScheduledPayment, SimulatedPayment, Subscription
from ..transport import Transport
from ..types import Charge, Rejected
from ..validation import Checker, path_ids, request_key, validate_bool

__all__ = ["Subscriptions"]

_subscription_page = page_parser(parse_subscription)
_payment_page = page_parser(parse_scheduled_payment)
_charge_page = page_parser(parse_charge)


def _nothing(value: Any) -> None:
    """A cancel answers 204 (or a body nobody needs): read the subscription afterwards."""


class Subscriptions:
    """``client.subscriptions``."""

    __slots__ = ("_polling_timeout", "_transport")

    def __init__(self, transport: Transport, polling_timeout: float) -> None:
        self._transport = transport
        self._polling_timeout = polling_timeout

    def _path(self, store_id: Any, subscription_id: Any, tail: str = "") -> str:
        store, sub = path_ids(store_id=store_id, subscription_id=subscription_id)
        return f"/stores/{store}/subscriptions/{sub}{tail}"

    def create(
        self,
        params: SubscriptionCreateParams | None = None,
        /,
        *,
        idempotency_key: str | uuid.UUID | None = None,
        **fields: Any,
    ) -> Subscription:
        """Create a subscription (``POST /subscriptions``); it answers ``unverified`` at first.

        ``params`` or its fields as keyword arguments; every rule is checked first.
        """
        sub = params if params is not None else SubscriptionCreateParams(**fields)
        checker = Checker()
        key = request_key(checker, idempotency_key)
        body = sub.to_body(checker)
        return self._transport.request(
            "POST", "/subscriptions", parse_subscription, body=body, idempotency_key=key
        )

    def retrieve(
        self, store_id: uuid.UUID | str, subscription_id: uuid.UUID | str, *, polling: bool = False
    ) -> Subscription:
        """One subscription; ``polling=True`` holds the answer while it is ``unverified``."""
        path = self._path(store_id, subscription_id)
        if validate_bool(polling, "polling"):
            return self._transport.request(
                "GET",
                path,
                parse_subscription,
                params={"polling": "true"},
                read_timeout=self._polling_timeout,
            )
        return self._transport.request("GET", path, parse_subscription)

    def _change(self, path: str, key: Any, body: dict[str, Any] | None, c: Checker) -> Subscription:
        idempotency_key = request_key(c, key)
        c.raise_if_any()
        return self._transport.request(
            "PATCH", path, parse_subscription, body=body, idempotency_key=idempotency_key
        )

    def suspend(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        *,
        termination_mode: str | None = None,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Subscription:
        """Stop charging a ``current`` or ``unpaid`` subscription (``PATCH .../suspend``).

        ``termination_mode``: ``immediate`` (the gateway's default) suspends now,
        ``on_next_payment`` on the next payment's day; sent as
        ``schedule_settings.termination_mode`` (the official SDKs' suspend body).
        """
        path = self._path(store_id, subscription_id, "/suspend")
        checker = Checker()
        body = None
        if termination_mode is not None:
            field = "schedule_settings.termination_mode"
            mode = checker.check(validate_termination_mode, termination_mode, field)
            body = {"schedule_settings": {"termination_mode": mode}}
        return self._change(path, idempotency_key, body, checker)

    def unsuspend(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        *,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Subscription:
        """Resume a ``suspended`` subscription (``PATCH .../unsuspend``); it becomes ``unpaid``."""
        path = self._path(store_id, subscription_id, "/unsuspend")
        return self._change(path, idempotency_key, None, Checker())

    def change_token(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        *,
        transaction_token_id: uuid.UUID | str,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> Subscription:
        """Charge the next payments to another card (``PATCH .../token``)."""
        path = self._path(store_id, subscription_id, "/token")
        checker = Checker()
        body = token_change_body(transaction_token_id, checker)
        return self._change(path, idempotency_key, body, checker)

    def update(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        params: SubscriptionUpdateParams | None = None,
        /,
        *,
        idempotency_key: str | uuid.UUID | None = None,
        **fields: Any,
    ) -> Subscription:
        """Change a subscription (``PATCH .../subscriptions/{id}``): its amount, metadata and
        settings, and, where its status allows (``update_actions``), its card, period or plan,
        or suspend or resume it. ``params`` or its fields as keyword arguments."""
        change = params if params is not None else SubscriptionUpdateParams(**fields)
        checker = Checker()
        key = request_key(checker, idempotency_key)
        body = change.to_body(checker)
        return self._change(self._path(store_id, subscription_id), key, body, checker)

    def cancel(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        *,
        idempotency_key: str | uuid.UUID | None = None,
    ) -> None:
        """Cancel for good (``DELETE .../subscriptions/{id}``, no body: the official SDKs
        send none); the answer is empty, read the subscription to see it ``canceled``."""
        path = self._path(store_id, subscription_id)
        checker = Checker()
        key = request_key(checker, idempotency_key)
        checker.raise_if_any()
        self._transport.request("DELETE", path, _nothing, idempotency_key=key)

    def payments(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        *,
        limit: int | None = None,
        cursor_direction: str | None = None,
        rejected: list[Rejected] | None = None,
    ) -> Iterator[ScheduledPayment]:
        """The subscription's scheduled payments (``GET .../payments``), page after page."""
        path = self._path(store_id, subscription_id, "/payments")
        params = list_params(
            limit=limit, cursor=None, cursor_direction=cursor_direction, filters={}
        )
        return follow_list(self._transport, path, _payment_page, params, rejected)

    def payment(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        payment_id: uuid.UUID | str,
    ) -> ScheduledPayment:
        """One scheduled payment (``GET .../payments/{paymentId}``)."""
        (payment,) = path_ids(payment_id=payment_id)
        path = self._path(store_id, subscription_id, f"/payments/{payment}")
        return self._transport.request("GET", path, parse_scheduled_payment)

    def charges(
        self,
        store_id: uuid.UUID | str,
        subscription_id: uuid.UUID | str,
        *,
        limit: int | None = None,
        rejected: list[Rejected] | None = None,
    ) -> Iterator[Charge]:
        """The subscription's charges (``GET .../charges``), newest first."""
        path = self._path(store_id, subscription_id, "/charges")
        params = list_params(limit=limit, cursor=None, cursor_direction=None, filters={})
        return follow_list(self._transport, path, _charge_page, params, rejected)

    def simulate_plan(
        self,
        params: PlanSimulationParams | None = None,
        /,
        *,
        store_id: uuid.UUID | str | None = None,
        **fields: Any,
    ) -> tuple[SimulatedPayment, ...]:
        """The payments a plan would make (``POST (/stores/{s})/subscriptions/simulate_plan``)."""
        simulation = params if params is not None else PlanSimulationParams(**fields)
        body = simulation.to_body()
        path = "/subscriptions/simulate_plan"
        if store_id is not None:
            (store,) = path_ids(store_id=store_id)
            path = f"/stores/{store}{path}"
        return self._transport.request("POST", path, parse_simulation, body=body)

    def list(
        self,
        store_id: uuid.UUID | str | None = None,
        *,
        limit: int | None = None,
        cursor_direction: str | None = None,
        rejected: list[Rejected] | None = None,
        **filters: Any,
    ) -> Iterator[Subscription]:
        """Every subscription of a store (or of every store), following ``has_more``.

        Filters: ``status``, ``mode``, ``search`` (the Node SDK's list parameters).
        """
        path = "/subscriptions"
        if store_id is not None:
            (store,) = path_ids(store_id=store_id)
            path = f"/stores/{store}/subscriptions"
        params = list_params(
            limit=limit,
            cursor=None,
            cursor_direction=cursor_direction,
            filters=filters,
        )
        return follow_list(self._transport, path, _subscription_page, params, rejected)
