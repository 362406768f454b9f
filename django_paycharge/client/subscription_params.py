"""What the client sends about subscriptions, validated before sending.

:class:`SubscriptionCreateParams` is the one definition of a new subscription's
parameters (``POST /subscriptions``) and :class:`PlanSimulationParams` of a plan
simulation; each field names its rule and its dotted place in the gateway's JSON,
as :class:`~.params.ChargeCreateParams` does, and ``to_body`` raises one
:class:`~django_paycharge.exceptions.InvalidParametersError` naming every broken
field. Required: a token, an amount, a currency and exactly one of ``period`` and
``cyclical_period`` (the Node SDK's ``requiredParams``).
"""

from __future__ import annotations

import dataclasses
import re
import uuid
import zoneinfo
from collections.abc import Mapping
from dataclasses import field
from datetime import date
from typing import Any

from .params import fields_body, rule
from .subscription_vocabulary import (
    CHANGE_PERIOD,
    CHANGE_PLAN,
    CHANGE_TOKEN,
    INSTALLMENT_PLAN_TYPES,
    SUBSCRIBABLE_PAYMENT_TYPES,
    SUBSCRIPTION_PERIODS,
    SUBSCRIPTION_PLAN_TYPES,
    SUSPEND,
    TERMINATION_MODES,
    UNSUSPEND,
)
from .validation import (
    Checker,
    invalid,
    validate_amount,
    validate_bool,
    validate_currency,
    validate_http_url,
    validate_metadata,
    validate_three_ds_mode,
    validate_uuid,
)

# Days, weeks, months, years: a subscription's cycles are counted in whole days.
_DURATION = re.compile(r"P(?=\d)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?")


def _choice(values: tuple[str, ...] | frozenset[str]) -> Any:
    def validate(value: Any, field: str) -> str:
        if not isinstance(value, str) or value not in values:
            raise invalid(field, "must be one of " + ", ".join(sorted(values)))
        return value

    return validate


validate_period = _choice(SUBSCRIPTION_PERIODS)
validate_termination_mode = _choice(TERMINATION_MODES)
validate_subscribable_payment_type = _choice(SUBSCRIBABLE_PAYMENT_TYPES)


def validate_duration(value: Any, field: str) -> str:
    """An ISO-8601 duration of whole days, weeks, months or years, not zero (``P1M``, ``P10D``)."""
    if isinstance(value, str) and _DURATION.fullmatch(value) and set(value) & set("123456789"):
        return value
    raise invalid(field, "must be an ISO-8601 duration in days to years, such as P1M or P10D")


def validate_day(value: Any, field: str) -> str:
    """A day: a ``date`` or ``YYYY-MM-DD`` text (a ``datetime`` is not a day)."""
    if type(value) is date:
        return value.isoformat()
    if isinstance(value, str) and len(value) == 10:
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise invalid(field, "must be a day (YYYY-MM-DD)")


def validate_zone_id(value: Any, field: str) -> str:
    """An IANA time zone name (``Asia/Tokyo``)."""
    if isinstance(value, str) and value and value.isprintable() and ".." not in value:
        try:
            zoneinfo.ZoneInfo(value)
            return value
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    raise invalid(field, "must be a time zone name such as Asia/Tokyo")


def validate_descriptor(value: Any, field: str = "descriptor") -> str:
    """A non-empty line of printable text (what the card statement shows)."""
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise invalid(field, "must be a non-empty line of printable text")
    return value


def _plan(types: tuple[str, ...], counts: Mapping[str, str]) -> Any:
    """A validator of ``{"plan_type": ..., <its count field>: positive int}``."""

    def validate(value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, Mapping) or value.get("plan_type") not in types:
            raise invalid(f"{field}.plan_type", "must be one of " + ", ".join(types))
        plan_type = value["plan_type"]
        count = counts.get(plan_type)
        allowed = {"plan_type", count} if count else {"plan_type"}
        if set(value) - allowed:
            raise invalid(field, "holds fields its plan type does not take")
        plan: dict[str, Any] = {"plan_type": plan_type}
        if count:
            plan[count] = validate_amount(value.get(count), f"{field}.{count}")
        return plan

    return validate


validate_installment_plan = _plan(INSTALLMENT_PLAN_TYPES, {"fixed_cycles": "fixed_cycles"})
validate_subscription_plan = _plan(
    SUBSCRIPTION_PLAN_TYPES,
    {"fixed_cycles": "fixed_cycles", "fixed_cycle_amount": "fixed_cycle_amount"},
)


def _schedule(name: str) -> str:
    return f"schedule_settings.{name}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Schedule:
    """The parameters a subscription and a simulation share (period, plan, schedule)."""

    amount: int = field(metadata=rule(validate_amount))
    currency: str = field(metadata=rule(validate_currency))
    period: str | None = field(metadata=rule(validate_period), default=None)
    cyclical_period: str | None = field(metadata=rule(validate_duration), default=None)
    initial_amount: int | None = field(metadata=rule(validate_amount), default=None)
    installment_plan: Mapping[str, Any] | None = field(
        metadata=rule(validate_installment_plan), default=None
    )
    start_on: date | str | None = field(
        metadata=rule(validate_day, _schedule("start_on")), default=None
    )
    zone_id: str | None = field(metadata=rule(validate_zone_id, _schedule("zone_id")), default=None)
    preserve_end_of_month: bool | None = field(
        metadata=rule(validate_bool, _schedule("preserve_end_of_month")), default=None
    )
    retry_interval: str | None = field(
        metadata=rule(validate_duration, _schedule("retry_interval")), default=None
    )
    termination_mode: str | None = field(
        metadata=rule(validate_termination_mode, _schedule("termination_mode")), default=None
    )
    subscription_plan: Mapping[str, Any] | None = field(
        metadata=rule(validate_subscription_plan), default=None
    )
    only_direct_currency: bool | None = field(metadata=rule(validate_bool), default=None)

    def _checked_body(self, required: frozenset[str], checker: Checker | None) -> dict[str, Any]:
        c = checker or Checker()
        body = fields_body(self, required, c)
        if (self.period is None) == (self.cyclical_period is None):
            c.fail("period", "give exactly one of period and cyclical_period")
        return body


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionCreateParams(_Schedule):
    """The parameters of a new subscription; ``None`` means "not sent".

    ``transaction_token_id`` is a token of type ``subscription``. ``amount`` is each
    cycle's, ``initial_amount`` the first payment's when it differs. The schedule's
    fields (``start_on``, ``zone_id``, ``preserve_end_of_month``, ``retry_interval``,
    ``termination_mode``) go in ``schedule_settings``. ``first_charge_capture_after``
    (a duration) needs ``first_charge_authorization_only=True``.
    """

    transaction_token_id: uuid.UUID | str = field(metadata=rule(validate_uuid))
    descriptor: str | None = field(metadata=rule(validate_descriptor), default=None)
    metadata: Mapping[str, Any] | None = field(metadata=rule(validate_metadata), default=None)
    three_ds_mode: str | None = field(
        metadata=rule(validate_three_ds_mode, "three_ds.mode"), default=None
    )
    three_ds_redirect_endpoint: str | None = field(
        metadata=rule(validate_http_url, "three_ds.redirect_endpoint"), default=None
    )
    first_charge_authorization_only: bool | None = field(metadata=rule(validate_bool), default=None)
    first_charge_capture_after: str | None = field(metadata=rule(validate_duration), default=None)

    def to_body(self, checker: Checker | None = None) -> dict[str, Any]:
        """The JSON body of ``POST /subscriptions``, every rule applied (one error for all)."""
        c = checker or Checker()
        body = self._checked_body(SUBSCRIPTION_REQUIRED, c)
        if self.first_charge_capture_after is not None and not self.first_charge_authorization_only:
            c.fail("first_charge_capture_after", "needs first_charge_authorization_only true")
        c.raise_if_any()
        return body

    def to_dict(self) -> dict[str, Any]:
        """The fields given (``None`` left out): ``SubscriptionCreateParams(**p.to_dict())``."""
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {name: value for name, value in given.items() if value is not None}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanSimulationParams(_Schedule):
    """What a plan simulation needs: the payment type, the amounts, the period, the plan."""

    payment_type: str = field(metadata=rule(validate_subscribable_payment_type))

    def to_body(self, checker: Checker | None = None) -> dict[str, Any]:
        """The JSON body of ``POST /subscriptions/simulate_plan`` (one error for all)."""
        c = checker or Checker()
        body = self._checked_body(SIMULATION_REQUIRED, c)
        c.raise_if_any()
        return body


#: ``status`` values a subscription's update may ask for: suspend, or resume (unsuspend).
UPDATE_STATUSES = ("suspended", "unpaid")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionUpdateParams:
    """A change of a subscription (``PATCH .../subscriptions/{id}``, the Node SDK's
    ``SubscriptionUpdateParams``); ``None`` means "not changed". Which of them its status
    allows is :func:`~.subscription_vocabulary.refusal`'s (:func:`update_actions`)."""

    amount: int | None = field(metadata=rule(validate_amount), default=None)
    metadata: Mapping[str, Any] | None = field(metadata=rule(validate_metadata), default=None)
    transaction_token_id: uuid.UUID | str | None = field(metadata=rule(validate_uuid), default=None)
    status: str | None = field(metadata=rule(_choice(UPDATE_STATUSES)), default=None)
    period: str | None = field(metadata=rule(validate_period), default=None)
    cyclical_period: str | None = field(metadata=rule(validate_duration), default=None)
    installment_plan: Mapping[str, Any] | None = field(
        metadata=rule(validate_installment_plan), default=None
    )
    subscription_plan: Mapping[str, Any] | None = field(
        metadata=rule(validate_subscription_plan), default=None
    )
    termination_mode: str | None = field(
        metadata=rule(validate_termination_mode, _schedule("termination_mode")), default=None
    )
    only_direct_currency: bool | None = field(metadata=rule(validate_bool), default=None)
    first_charge_authorization_only: bool | None = field(metadata=rule(validate_bool), default=None)
    first_charge_capture_after: str | None = field(metadata=rule(validate_duration), default=None)

    def to_body(self, checker: Checker | None = None) -> dict[str, Any]:
        """The JSON body of the PATCH, every rule applied (one error for all); an update that
        changes nothing is refused."""
        c = checker or Checker()
        body = fields_body(self, frozenset(), c)
        if not body:
            c.fail("amount", "give at least one thing to change")
        if self.period is not None and self.cyclical_period is not None:
            c.fail("period", "give at most one of period and cyclical_period")
        c.raise_if_any()
        return body

    def to_dict(self) -> dict[str, Any]:
        """The fields given (``None`` left out): ``SubscriptionUpdateParams(**p.to_dict())``."""
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {name: value for name, value in given.items() if value is not None}


def update_actions(body: Mapping[str, Any]) -> list[str]:
    """The guarded changes a checked update body asks for (the card, the period, the plan,
    a suspension or a resumption), in the order the gateway checks them."""
    actions = []
    if "transaction_token_id" in body:
        actions.append(CHANGE_TOKEN)
    if "period" in body or "cyclical_period" in body:
        actions.append(CHANGE_PERIOD)
    if "installment_plan" in body or "subscription_plan" in body:
        actions.append(CHANGE_PLAN)
    if "status" in body:
        actions.append(SUSPEND if body["status"] == "suspended" else UNSUSPEND)
    return actions


def _required(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING)


#: The fields without which the gateway refuses a subscription, or a simulation.
SUBSCRIPTION_REQUIRED = _required(SubscriptionCreateParams)
SIMULATION_REQUIRED = _required(PlanSimulationParams)


def token_change_body(transaction_token_id: Any, checker: Checker) -> dict[str, Any]:
    """``{"transaction_token_id": ...}``: a subscription's new card."""
    token = checker.check(validate_uuid, transaction_token_id, "transaction_token_id")
    return {"transaction_token_id": token}
