"""The fake's subscriptions: created from a ``subscription`` token, charged on a clock of its own.

A mixin of :class:`~django_paycharge.testing.state.FakeState` (the same lock,
charges and deliveries). The create body is checked with the client's own
:class:`~django_paycharge.client.subscription_params.SubscriptionCreateParams`,
and every change with the client's transition table
(:func:`~django_paycharge.client.subscription_vocabulary.refusal`): a refused
change is a 400 with the SDKs' code (``FORBIDDEN_PARAMETER`` is a field's reason
of a ``VALIDATION_ERROR``, as the PHP SDK raises it).

Payments: the first is charged right after the create answer (or after
``processing_delay``); a success makes the subscription ``current`` and
schedules the next one a period later, a decline makes it ``unpaid``. The
customer is there for the first one only: a card that asks for 3-D Secure
(``three_ds`` of the create body, as a charge's) waits for its challenge
(``awaiting``), and a konbini payment waits for the customer to pay at the store;
the subscription stays ``unverified`` (or its payment unpaid) until that charge
settles. Later card payments run without a challenge (the merchant charges them). Later
payments are charged when :meth:`SubscriptionRules.move_clock` moves the
subscriptions' clock past their due date (again at ``retry_interval`` after a
decline); the last payment of a fixed plan completes the subscription; a suspend
``on_next_payment`` takes effect on the next due day instead of its charge. Events:
``subscription_created``, ``_payment``, ``_failure``, ``_suspended``,
``_canceled``, ``_completed``, their ``data`` the subscription.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
import zoneinfo
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..client.params import fields_from_wire
from ..client.subscription_params import (
    SubscriptionCreateParams,
    SubscriptionUpdateParams,
    update_actions,
)
from ..client.subscription_vocabulary import (
    CHANGE_TOKEN,
    NEXT_STATUS,
    SUBSCRIBABLE_PAYMENT_TYPES,
    SUBSCRIPTION_TOKEN_TYPE,
    SUSPEND,
    UNSUSPEND,
    refusal,
)
from ..client.vocabulary import (
    FORBIDDEN_PARAMETER,
    NOT_SUBSCRIPTION_TOKEN,
    UNSUPPORTED_PAYMENT_TYPE,
)
from ..exceptions import InvalidParametersError
from .basics import ApiError, Json, iso, now, validation_error
from .listing import page_of, parse_page_query
from .records import AppToken, Charge, Delivery, Store, TransactionToken
from .subscription_records import PaymentRecord, SubscriptionRecord, add_duration, due_date

if TYPE_CHECKING:
    from .webhook_sender import WebhookSender

_DEFAULT_ZONE = "Asia/Tokyo"
_OPTIONAL_ECHOED = (
    "descriptor",
    "only_direct_currency",
    "installment_plan",
    "subscription_plan",
    "three_ds",
)
#: A charge of a subscription that has not settled yet: its payment waits for it.
_UNSETTLED = ("pending", "awaiting")
#: What an update may change that the fake only echoes back.
_UPDATE_ECHOED = (
    "only_direct_currency",
    "first_charge_authorization_only",
    "first_charge_capture_after",
)


def parse_subscription_body(body: Json) -> dict[str, Any]:
    """The checked body of ``POST /subscriptions`` (the client's rules), or a 400 naming fields."""
    try:
        return SubscriptionCreateParams(
            **fields_from_wire(SubscriptionCreateParams, body)
        ).to_body()
    except InvalidParametersError as exc:
        raise validation_error([(e.field, "INVALID_FORMAT") for e in exc.errors]) from None


def parse_update_body(body: Json) -> dict[str, Any]:
    """The checked body of ``PATCH .../subscriptions/{id}``, or a 400 naming fields."""
    try:
        return SubscriptionUpdateParams(
            **fields_from_wire(SubscriptionUpdateParams, body)
        ).to_body()
    except InvalidParametersError as exc:
        raise validation_error([(e.field, "INVALID_FORMAT") for e in exc.errors]) from None


def check_subscription_token(token: TransactionToken) -> None:
    """A 400 for a token that cannot pay a subscription: its type, or its payment type."""
    if token.type != SUBSCRIPTION_TOKEN_TYPE:
        raise ApiError(400, NOT_SUBSCRIPTION_TOKEN, [("transaction_token_id", token.type)])
    if token.payment_type not in SUBSCRIBABLE_PAYMENT_TYPES:
        reason = [("transaction_token_id", token.payment_type)]
        raise ApiError(400, UNSUPPORTED_PAYMENT_TYPE, reason)


def _cycles(checked: Json) -> int | None:
    for name in ("subscription_plan", "installment_plan"):
        plan = checked.get(name) or {}
        if plan.get("plan_type") == "fixed_cycles":
            return int(plan["fixed_cycles"])
    return None


class SubscriptionRules:
    """Subscriptions, their payments and their clock, for :class:`FakeState`."""

    lock: threading.RLock
    sender: WebhookSender
    tokens: dict[str, TransactionToken]
    stores: dict[str, Store]
    charges: dict[str, Charge]

    if TYPE_CHECKING:  # defined by FakeState

        def store_for(self, app: AppToken, store_id: str) -> Store: ...
        def add_charge(self, charge: Charge) -> None: ...
        def _card_outcome(self, charge: Charge) -> list[Delivery]: ...
        def _set_status(self, charge: Charge, status: str) -> list[Delivery]: ...
        def later(self, work: Any, item_id: str) -> None: ...
        def record_deliveries(
            self, store: Store, events: list[str], data: Json
        ) -> list[Delivery]: ...

    def reset_subscriptions(self) -> None:
        """Forget every subscription and put the clock back (called by ``reset``)."""
        self.subscriptions: dict[str, SubscriptionRecord] = {}
        #: How far the subscriptions' clock is ahead of the real one.
        self.clock_offset = dt.timedelta()

    def clock(self) -> dt.datetime:
        """The subscriptions' time: now, moved by :meth:`move_clock`."""
        return now() + self.clock_offset

    def _today(self, sub: SubscriptionRecord) -> dt.date:
        zone = zoneinfo.ZoneInfo(sub.schedule.get("zone_id") or _DEFAULT_ZONE)
        return self.clock().astimezone(zone).date()

    # -- create and read ---------------------------------------------------------------------

    def create_subscription(self, app: AppToken, body: Json) -> SubscriptionRecord:
        """``POST /subscriptions``: ``unverified``; its first payment is charged right after."""
        checked = parse_subscription_body(body)
        with self.lock:
            token = self.tokens.get(checked["transaction_token_id"])
            if token is None or not app.reaches(self.stores[token.store_id]):
                raise ApiError(404, "NOT_FOUND", [("transaction_token_id", "NOT_FOUND")])
            check_subscription_token(token)
            sub = self._new_subscription(token, checked)
            self.subscriptions[sub.id] = sub
            start = (
                dt.date.fromisoformat(sub.schedule["start_on"])
                if "start_on" in sub.schedule
                else None
            )
            first_due = self._today(sub) if sub.initial_amount or start is None else start
            self._schedule(sub, first_due, sub.initial_amount or sub.amount)
            deliveries = self.record_deliveries(sub.store, ["subscription_created"], sub.to_json())
        self.sender.send(deliveries)
        return sub

    def _new_subscription(self, token: TransactionToken, checked: Json) -> SubscriptionRecord:
        created = self.clock()
        schedule = {"zone_id": _DEFAULT_ZONE, "termination_mode": "immediate"}
        schedule.update(checked.get("schedule_settings") or {})
        return SubscriptionRecord(
            id=str(uuid.uuid4()),
            store=self.stores[token.store_id],
            token=token,
            amount=checked["amount"],
            currency=checked["currency"],
            created=created,
            updated=created,
            body={k: checked[k] for k in _OPTIONAL_ECHOED if k in checked},
            period=checked.get("period"),
            cyclical_period=checked.get("cyclical_period"),
            initial_amount=checked.get("initial_amount"),
            cycles=_cycles(checked),
            schedule=schedule,
            metadata=dict(checked.get("metadata") or {}),
        )

    def _schedule(self, sub: SubscriptionRecord, due: dt.date, amount: int) -> None:
        at = self.clock()
        last = sub.cycles is not None and len(sub.payments) + 1 >= sub.cycles
        payment = PaymentRecord(
            str(uuid.uuid4()), due, amount, sub.currency, sub.schedule["zone_id"], at, at, last
        )
        sub.payments.append(payment)

    def subscription(
        self, app: AppToken, store_id: str, subscription_id: str
    ) -> SubscriptionRecord:
        """A subscription of a store the credentials reach, or a 403/404."""
        with self.lock:
            store = self.store_for(app, store_id)
            found = self.subscriptions.get(subscription_id)
            if found is None or found.store.id != store.id:
                raise ApiError(404, "NOT_FOUND", [("subscriptionId", "NOT_FOUND")])
            return found

    def list_subscriptions(
        self, app: AppToken, store: Store | None, query: Mapping[str, str]
    ) -> Json:
        """A page of subscriptions of one store, or of every store reached; ``status``, ``mode``."""
        page = parse_page_query(query)
        with self.lock:
            mine = {
                s.id: s
                for s in self.subscriptions.values()
                if (s.store.id == store.id if store is not None else app.reaches(s.store))
                and all(query[k] == getattr(s, k) for k in ("status", "mode") if k in query)
            }
            return page_of(mine, page)

    def list_payments(self, sub: SubscriptionRecord, query: Mapping[str, str]) -> Json:
        """A page of the subscription's scheduled payments."""
        with self.lock:
            return page_of({p.id: p for p in sub.payments}, parse_page_query(query))

    # -- changes -----------------------------------------------------------------------------

    def _guard(self, sub: SubscriptionRecord, action: str) -> None:
        reason = refusal(action, sub.status)
        if reason == FORBIDDEN_PARAMETER:
            raise validation_error([("status", FORBIDDEN_PARAMETER)])
        if reason is not None:
            raise ApiError(400, reason, [("status", sub.status)])

    def change_subscription(self, sub: SubscriptionRecord, action: str, body: Json) -> Json:
        """Suspend, unsuspend, cancel or change the card, if the status allows it."""
        with self.lock:
            self._guard(sub, action)
            events: list[str] = []
            if action == CHANGE_TOKEN:
                sub.token = self._subscription_token(sub, body.get("transaction_token_id"))
            elif action == SUSPEND and self._suspend_mode(body) == "on_next_payment":
                sub.suspend_on_next_payment = True
            else:
                sub.status = NEXT_STATUS[action]
                events = {SUSPEND: ["subscription_suspended"], UNSUSPEND: []}.get(
                    action, ["subscription_canceled"]
                )
            sub.updated = self.clock()
            data = sub.to_json()
            deliveries = self.record_deliveries(sub.store, events, data)
        self.sender.send(deliveries)
        return data

    def update_subscription(self, sub: SubscriptionRecord, body: Json) -> Json:
        """``PATCH``: the amount (of the payments not made yet), metadata and settings at any
        time; the card, the period, the plan, a suspension or a resumption only where the
        status allows each (every guard before anything changes)."""
        checked = parse_update_body(body)
        with self.lock:
            actions = update_actions(checked)
            for action in actions:
                self._guard(sub, action)
            if CHANGE_TOKEN in actions:
                sub.token = self._subscription_token(sub, checked["transaction_token_id"])
            if "period" in checked or "cyclical_period" in checked:
                sub.period = checked.get("period")
                sub.cyclical_period = checked.get("cyclical_period")
            for name in ("installment_plan", "subscription_plan", *_UPDATE_ECHOED):
                if name in checked:
                    sub.body[name] = checked[name]
            if "installment_plan" in checked or "subscription_plan" in checked:
                sub.cycles = _cycles(sub.body)
            if "amount" in checked:
                sub.amount = checked["amount"]
                for payment in sub.payments:
                    if not payment.is_paid and not payment.charge_ids:
                        payment.amount = sub.amount
            if "metadata" in checked:
                sub.metadata = dict(checked["metadata"])
            sub.schedule.update(checked.get("schedule_settings") or {})
            events = []
            if "status" in checked:
                action = actions[-1]
                sub.status = NEXT_STATUS[action]
                events = ["subscription_suspended"] if action == SUSPEND else []
            sub.updated = self.clock()
            data = sub.to_json()
            deliveries = self.record_deliveries(sub.store, events, data)
        self.sender.send(deliveries)
        return data

    def _suspend_mode(self, body: Json) -> str:
        """When a suspension takes effect (the official SDKs' suspend body): now by default."""
        settings = body.get("schedule_settings")
        given = settings.get("termination_mode") if isinstance(settings, dict) else None
        return str(given or "immediate")

    def _subscription_token(self, sub: SubscriptionRecord, token_id: Any) -> TransactionToken:
        token = self.tokens.get(token_id) if isinstance(token_id, str) else None
        if token is None or token.store_id != sub.store.id:
            raise ApiError(404, "NOT_FOUND", [("transaction_token_id", "NOT_FOUND")])
        check_subscription_token(token)
        return token

    # -- payments on the clock ---------------------------------------------------------------

    def move_clock(self, delta: dt.timedelta) -> int:
        """Test control: the subscriptions' clock moves ahead; due payments are charged.

        Returns how many payments were tried.
        """
        with self.lock:
            self.clock_offset += delta
            due = [s.id for s in self.subscriptions.values() if s.status in ("current", "unpaid")]
        return sum(self.charge_due(sub_id) for sub_id in due)

    def start_subscription(self, subscription_id: str) -> None:
        """Right after the create answer: charge the first payment if it is due today;
        one due later leaves the subscription ``current``, waiting for the clock. The
        customer is there: the first charge may ask them for 3-D Secure."""
        if not self.charge_due(subscription_id, customer_present=True):
            with self.lock:
                sub = self.subscriptions[subscription_id]
                if sub.status == "unverified":
                    sub.status = "current"

    def charge_due(self, subscription_id: str, *, customer_present: bool = False) -> int:
        """Charge each payment of the subscription whose day (or retry day) has come.

        A payment whose charge has not settled (a 3-D Secure challenge, a konbini payment
        not made yet) is not charged again: its charge settles it."""
        tried = 0
        while True:
            with self.lock:
                sub = self.subscriptions[subscription_id]
                payment = sub.next_payment()
                if payment is None or sub.status in ("suspended", "canceled", "completed"):
                    return tried
                # A decline sets a retry day after today, so each payment is tried once a call.
                if (payment.retry_date or payment.due_date) > self._today(sub):
                    return tried
                if any(self.charges[c].status in _UNSETTLED for c in payment.charge_ids):
                    return tried
            self.pay_subscription(subscription_id, customer_present=customer_present)
            customer_present = False
            tried += 1

    def pay_subscription(self, subscription_id: str, *, customer_present: bool = False) -> None:
        """Charge the subscription's next payment now (the first one right after creation).

        A konbini charge, and a card charge that asks the customer (``customer_present``)
        for 3-D Secure, wait (``awaiting``): the payment is settled when the charge is
        (:meth:`subscription_charge_settled`)."""
        with self.lock:
            sub = self.subscriptions[subscription_id]
            payment = sub.next_payment()
            if payment is None or sub.status in ("suspended", "canceled", "completed"):
                return
            if sub.suspend_on_next_payment:
                sub.status, sub.updated = "suspended", self.clock()
                sub.suspend_on_next_payment = False
                deliveries = self.record_deliveries(
                    sub.store, ["subscription_suspended"], sub.to_json()
                )
            else:
                charge = self._payment_charge(sub, payment, customer_present)
                if sub.token.payment_type != "card":
                    deliveries = self._set_status(charge, "awaiting")
                elif customer_present and charge.needs_three_ds_challenge():
                    charge.three_ds_challenge = True
                    deliveries = self._set_status(charge, "awaiting")
                else:
                    deliveries = self._card_outcome(charge)
                    deliveries += self._after_payment(sub, payment, charge)
        self.sender.send(deliveries)

    def subscription_charge_settled(self, charge: Charge) -> list[Delivery]:
        """Under the lock, once a charge left ``awaiting``: its subscription payment's outcome
        (paid and the next one scheduled, or declined), as :meth:`pay_subscription` does
        for a charge that settles at once. Nothing for a charge of no subscription."""
        sub = self.subscriptions.get(charge.subscription_id or "")
        if sub is None or charge.status in _UNSETTLED:
            return []
        payment = next((p for p in sub.payments if charge.id in p.charge_ids), None)
        if payment is None or payment.is_paid or sub.status in ("canceled", "completed"):
            return []
        return self._after_payment(sub, payment, charge)

    def _payment_charge(
        self, sub: SubscriptionRecord, payment: PaymentRecord, customer_present: bool
    ) -> Charge:
        created = self.clock()
        charge = Charge(
            id=str(uuid.uuid4()),
            store=sub.store,
            token=sub.token,
            amount=payment.amount,
            currency=payment.currency,
            created=created,
            created_on=iso(created),
            metadata=dict(sub.metadata),
            initial_metadata=dict(sub.metadata),
            # The customer's charge carries the subscription's 3-D Secure settings (its
            # redirect endpoint brings them back); a renewal's has none.
            three_ds=dict(sub.body["three_ds"])
            if customer_present and "three_ds" in sub.body
            else None,
            subscription_id=sub.id,
        )
        self.add_charge(charge)
        payment.charge_ids.append(charge.id)
        return charge

    def _after_payment(
        self, sub: SubscriptionRecord, payment: PaymentRecord, charge: Charge
    ) -> list[Delivery]:
        today = self._today(sub)
        payment.updated = sub.updated = self.clock()
        if charge.status != "successful":
            sub.status = "unpaid"
            interval = sub.schedule.get("retry_interval")
            payment.retry_date = add_duration(today, interval) if interval else dt.date.max
            return self.record_deliveries(sub.store, ["subscription_failure"], sub.to_json())
        payment.is_paid, payment.successful_payment_date, payment.retry_date = True, today, None
        if payment.is_last_payment:
            sub.status = "completed"
            events = ["subscription_payment", "subscription_completed"]
        else:
            sub.status = "current"
            first = sub.payments[0].due_date
            due = due_date(first, len(sub.payments), sub.period, sub.cyclical_period)
            self._schedule(sub, due, sub.amount)
            events = ["subscription_payment"]
        return self.record_deliveries(sub.store, events, sub.to_json())
