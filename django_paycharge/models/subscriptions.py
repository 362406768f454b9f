"""The mirror of subscriptions and their scheduled payments.

As for charges: every field the gateway sends, nullable (NULL is unknown: missing,
null, or a value that does not fit), ``raw`` as received, and ``status_rank`` so
that a stale read never takes a row back (written by ``services.mirror``, the one
writer). A charge belongs to a subscription through its mirrored ``subscription_id``
(:meth:`Subscription.charges`): either may be mirrored first.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from .charges import Charge, KeyedRequest
from .payload import PayloadEncoder


def _formatted(verbose_name: Any) -> models.DecimalField[Any, Any]:
    return models.DecimalField(verbose_name, max_digits=24, decimal_places=4, null=True, blank=True)


def _text(verbose_name: Any, length: int = 32) -> models.CharField[Any, Any]:
    return models.CharField(verbose_name, max_length=length, null=True, blank=True)


def _json(verbose_name: Any) -> models.JSONField[Any, Any]:
    return models.JSONField(verbose_name, null=True, blank=True, encoder=PayloadEncoder)


class SubscriptionStatus(models.TextChoices):
    UNVERIFIED = "unverified", _("Unverified")
    UNCONFIRMED = "unconfirmed", _("Unconfirmed")
    AUTHORIZED = "authorized", _("Authorized")
    UNPAID = "unpaid", _("Unpaid")
    CURRENT = "current", _("Current")
    SUSPENDED = "suspended", _("Suspended")
    CANCELED = "canceled", _("Canceled")
    COMPLETED = "completed", _("Completed")


#: A ``period``'s name in the shop's language (the gateway sends these words; one it adds
#: later is shown as sent).
PERIOD_LABELS = {
    "daily": _("daily"),
    "weekly": _("weekly"),
    "biweekly": _("every two weeks"),
    "monthly": _("monthly"),
    "bimonthly": _("every two months"),
    "quarterly": _("quarterly"),
    "semiannually": _("every six months"),
    "annually": _("yearly"),
}


class Subscription(models.Model):
    """A subscription as the gateway last told us; change it through the services."""

    gateway_id = models.UUIDField(_("subscription id"), unique=True)
    account = models.CharField(_("account"), max_length=64, default="default")
    store_id = models.UUIDField(_("store id"), null=True, blank=True)
    transaction_token_id = models.UUIDField(
        _("transaction token id"), null=True, blank=True, db_index=True
    )
    mode = _text(_("mode"), 16)
    status = models.CharField(
        _("status"), max_length=32, null=True, blank=True, choices=SubscriptionStatus.choices
    )
    status_rank = models.PositiveSmallIntegerField(_("status rank"), default=0, editable=False)
    amount = models.BigIntegerField(_("amount"), null=True, blank=True)
    amount_formatted = _formatted(_("amount (formatted)"))
    amount_left = models.BigIntegerField(_("amount left"), null=True, blank=True)
    amount_left_formatted = _formatted(_("amount left (formatted)"))
    initial_amount = models.BigIntegerField(_("initial amount"), null=True, blank=True)
    initial_amount_formatted = _formatted(_("initial amount (formatted)"))
    currency = _text(_("currency"), 3)
    payments_left = models.BigIntegerField(_("payments left"), null=True, blank=True)
    cycles_left = models.BigIntegerField(_("cycles left"), null=True, blank=True)
    period = _text(_("period"))
    cyclical_period = _text(_("cyclical period"))
    descriptor = _text(_("descriptor"), 255)
    only_direct_currency = models.BooleanField(_("only direct currency"), null=True, blank=True)
    first_charge_authorization_only = models.BooleanField(
        _("first charge authorization only"), null=True, blank=True
    )
    first_charge_capture_after = _text(_("first charge captured after"))
    installment_plan = _json(_("installment plan"))
    subscription_plan = _json(_("subscription plan"))
    schedule_settings = _json(_("schedule settings"))
    #: The next payment's due day, from ``next_payment`` (lists sort and filter on it).
    next_payment_date = models.DateField(_("next payment date"), null=True, blank=True)
    three_ds = _json(_("3-D Secure"))
    metadata = _json(_("metadata"))
    created_on = models.DateTimeField(_("created on"), null=True, blank=True)
    updated_on = models.DateTimeField(_("updated on"), null=True, blank=True)
    raw = models.JSONField(_("raw payload"), default=dict, encoder=PayloadEncoder)
    synced_at = models.DateTimeField(_("synced at"))
    first_seen_at = models.DateTimeField(_("first seen at"))

    class Meta:
        verbose_name = _("subscription")
        verbose_name_plural = _("subscriptions")
        ordering = ["-created_on", "-id"]
        indexes = [
            models.Index(fields=["-created_on", "-id"], name="paycharge_sub_created"),
            models.Index(fields=["status", "-created_on"], name="paycharge_sub_status"),
            models.Index(fields=["next_payment_date"], name="paycharge_sub_next"),
        ]

    def __str__(self) -> str:
        return f"{self.gateway_id} ({self.get_status_display() or self.status or '?'})"

    def period_display(self) -> str:
        """Its period in the shop's language, or its ISO ``cyclical_period``; "" if neither."""
        if self.period:
            return str(PERIOD_LABELS.get(self.period, self.period))
        return self.cyclical_period or ""

    def charges(self) -> QuerySet[Charge]:
        """The mirrored charges of this subscription (its payments' charges), newest first."""
        return Charge.objects.filter(subscription_id=self.gateway_id)


class ScheduledPayment(models.Model):
    """One payment of a subscription's schedule, as the gateway last told us.

    ``status_rank`` is 1 once paid: a stale read never makes a paid payment unpaid.
    """

    gateway_id = models.UUIDField(_("payment id"), unique=True)
    subscription = models.ForeignKey(
        Subscription,
        on_delete=models.CASCADE,
        related_name="scheduled_payments",
        verbose_name=_("subscription"),
    )
    account = models.CharField(_("account"), max_length=64, default="default")
    due_date = models.DateField(_("due date"), null=True, blank=True)
    zone_id = _text(_("time zone"), 64)
    amount = models.BigIntegerField(_("amount"), null=True, blank=True)
    amount_formatted = _formatted(_("amount (formatted)"))
    currency = _text(_("currency"), 3)
    is_paid = models.BooleanField(_("paid"), null=True, blank=True)
    is_last_payment = models.BooleanField(_("last payment"), null=True, blank=True)
    successful_payment_date = models.DateField(_("paid on"), null=True, blank=True)
    terminate_with_status = _text(_("terminates with status"))
    retry_date = models.DateField(_("retry date"), null=True, blank=True)
    status_rank = models.PositiveSmallIntegerField(_("status rank"), default=0, editable=False)
    created_on = models.DateTimeField(_("created on"), null=True, blank=True)
    updated_on = models.DateTimeField(_("updated on"), null=True, blank=True)
    raw = models.JSONField(_("raw payload"), default=dict, encoder=PayloadEncoder)
    synced_at = models.DateTimeField(_("synced at"))
    first_seen_at = models.DateTimeField(_("first seen at"))

    class Meta:
        verbose_name = _("scheduled payment")
        verbose_name_plural = _("scheduled payments")
        ordering = ["due_date", "id"]
        indexes = [
            models.Index(fields=["subscription", "due_date"], name="paycharge_sub_payment_due"),
        ]

    def __str__(self) -> str:
        return f"{self.due_date} {self.amount} {self.currency or ''}".strip()


class SubscriptionRequest(KeyedRequest):
    """A new subscription, or a change of one, committed with its idempotency key first.

    Driven by the one exactly-once machine (``services.lifecycle.exactly_once``) like
    :class:`ChargeRequest` and :class:`ChargeActionRequest`: a lost answer or a crash is
    asked again with the same key, or looked for by reads, never made twice.
    """

    class Kind(models.TextChoices):
        CREATE = "subscription_create", _("New subscription")
        SUSPEND = "subscription_suspend", _("Suspend")
        RESUME = "subscription_resume", _("Resume")
        CANCEL = "subscription_cancel", _("Cancel")
        CHANGE_CARD = "subscription_card", _("Change the card")
        UPDATE = "subscription_update", _("Change the amount, period or plan")

    kind = models.CharField(_("kind"), max_length=32, choices=Kind.choices)
    #: The subscription changed, or the one the create made once stored.
    subscription = models.ForeignKey(
        Subscription,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="requests",
        verbose_name=_("subscription"),
    )

    class Meta:
        verbose_name = _("subscription request")
        verbose_name_plural = _("subscription requests")
        indexes = [models.Index(fields=["state", "created_at"], name="paycharge_subreq_state")]
        permissions = [
            ("suspend_subscription", _("Can suspend subscriptions")),
            ("resume_subscription", _("Can resume subscriptions")),
            ("cancel_subscription", _("Can cancel subscriptions")),
            ("change_subscription_card", _("Can change subscriptions' cards")),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.idempotency_key} ({self.get_state_display()})"
