"""The mirror of a charge's refunds and cancels, and the requests that make them exactly once."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import F, QuerySet, Sum
from django.utils.translation import gettext_lazy as _

from .charges import REFUNDED_ANNOTATION, Charge, KeyedRequest
from .payload import PayloadEncoder


class OperationStatus(models.TextChoices):
    """Statuses of refunds and cancels (any other value the gateway sends is kept)."""

    PENDING = "pending", _("Pending")
    SUCCESSFUL = "successful", _("Successful")
    FAILED = "failed", _("Failed")
    ERROR = "error", _("Error")


class RefundReason(models.TextChoices):
    DUPLICATE = "duplicate", _("Duplicate charge")
    FRAUD = "fraud", _("Fraudulent charge")
    CUSTOMER_REQUEST = "customer_request", _("Requested by the customer")
    SYSTEM_FAILURE = "system_failure", _("System failure")
    CHARGEBACK = "chargeback", _("Chargeback")
    CHARGEBACK_FEE_EXEMPT = "chargeback_fee_exempt", _("Chargeback (fee exempt)")
    CHARGEBACK_REVERSE = "chargeback_reverse", _("Chargeback reversed")


#: Refunds that use up the charged amount (a failed one gave nothing back).
COUNTED_REFUND_STATUSES = ("pending", "successful")


class _ChargeChild(models.Model):
    """What refunds and cancels share: every field may be missing except the id."""

    gateway_id = models.UUIDField(_("id"), unique=True)
    charge = models.ForeignKey(Charge, on_delete=models.CASCADE, verbose_name=_("charge"))
    account = models.CharField(_("account"), max_length=64, default="default")
    store_id = models.UUIDField(_("store id"), null=True, blank=True)
    # Unknown (NULL) when the gateway's value is missing or does not fit, as for charges.
    status = models.CharField(
        _("status"), max_length=32, null=True, blank=True, choices=OperationStatus.choices
    )
    status_rank = models.PositiveSmallIntegerField(_("status rank"), default=0, editable=False)
    error = models.JSONField(_("error"), null=True, blank=True, encoder=PayloadEncoder)
    metadata = models.JSONField(_("metadata"), null=True, blank=True, encoder=PayloadEncoder)
    mode = models.CharField(_("mode"), max_length=16, null=True, blank=True)
    created_on = models.DateTimeField(_("created on"), null=True, blank=True)
    updated_on = models.DateTimeField(_("updated on"), null=True, blank=True)
    raw = models.JSONField(_("raw payload"), default=dict, encoder=PayloadEncoder)
    synced_at = models.DateTimeField(_("synced at"))
    first_seen_at = models.DateTimeField(_("first seen at"))

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.gateway_id} ({self.get_status_display() or self.status or '?'})"


class Refund(_ChargeChild):
    """A refund of a charge, as the gateway last told us. Amounts in minor units."""

    amount = models.BigIntegerField(_("amount"), null=True, blank=True)
    currency = models.CharField(_("currency"), max_length=3, null=True, blank=True)
    amount_formatted = models.DecimalField(
        _("amount (formatted)"), max_digits=24, decimal_places=4, null=True, blank=True
    )
    reason = models.CharField(
        _("reason"), max_length=64, null=True, blank=True, choices=RefundReason.choices
    )
    message = models.TextField(_("message"), null=True, blank=True)

    class Meta:
        verbose_name = _("refund")
        verbose_name_plural = _("refunds")
        ordering = ["-created_on", "-id"]
        default_related_name = "refunds"
        indexes = [
            models.Index(fields=["charge", "status"], name="paycharge_refund_charge"),
            models.Index(fields=["-created_on", "-id"], name="paycharge_refund_created"),
            models.Index(fields=["status", "-created_on"], name="paycharge_refund_status"),
        ]


class Cancel(_ChargeChild):
    """A cancel of a charge, as the gateway last told us."""

    class Meta:
        verbose_name = _("cancel")
        verbose_name_plural = _("cancels")
        ordering = ["-created_on", "-id"]
        default_related_name = "cancels"
        indexes = [
            models.Index(fields=["-created_on", "-id"], name="paycharge_cancel_created"),
            models.Index(fields=["status", "-created_on"], name="paycharge_cancel_status"),
        ]


def refunded_amount(charge: Charge, statuses: tuple[str, ...] = ("successful",)) -> int:
    """The sum of the charge's refunds in ``statuses`` (successful ones by default), minor units.

    The successful sum is the charge's stored ``refunds_total`` (kept by
    ``services.mirror.store_refund``, the one writer of refunds): read from a
    charge of :func:`with_refunded_amounts` without a query, otherwise from the
    database (one query, so a charge loaded before a refund still says it).
    """
    if statuses == ("successful",):
        return charge.refunded_amount
    total = Refund.objects.filter(charge=charge, status__in=statuses).aggregate(
        total=Sum("amount")
    )["total"]
    return int(total or 0)


class RefundState(models.TextChoices):
    """Where a charge's money is, as far as refunds go (successful refunds only)."""

    REFUNDED = "refunded", _("Refunded")
    PARTIALLY_REFUNDED = "partially_refunded", _("Partially refunded")


def refund_state(charged: int | None, refunded: int | None) -> str:
    """``"refunded"`` when successful refunds gave back the whole charged amount,
    ``"partially_refunded"`` when some of it, ``""`` when none (or nothing was charged)."""
    if not refunded or refunded <= 0:
        return ""
    if charged is not None and refunded >= charged:
        return RefundState.REFUNDED
    return RefundState.PARTIALLY_REFUNDED


def with_refunded_amounts(queryset: QuerySet[Charge]) -> QuerySet[Charge]:
    """``queryset`` with each charge's refunded total (its stored ``refunds_total``), for lists."""
    return queryset.annotate(**{REFUNDED_ANNOTATION: F("refunds_total")})


class ChargeActionRequest(KeyedRequest):
    """A capture, cancel, refund or metadata update: committed with its idempotency key first.

    Like :class:`ChargeRequest` for new charges, and driven by the same machine
    (``services.lifecycle.exactly_once``): if the process dies or the answer is lost after
    the gateway acted, resending the same body with the same key ends with one
    remote refund (or cancel, or capture) and one local row; an answer that
    never comes is abandoned and looked for by reads, never sent again. States:
    :class:`RequestState`.
    """

    class Kind(models.TextChoices):
        CAPTURE = "capture", _("Capture")
        CANCEL = "cancel", _("Cancel")
        REFUND = "refund", _("Refund")
        UPDATE = "update", _("Metadata update")

    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    charge = models.ForeignKey(
        Charge, on_delete=models.CASCADE, related_name="action_requests", verbose_name=_("charge")
    )
    refund = models.ForeignKey(
        Refund, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests"
    )
    cancel = models.ForeignKey(
        Cancel, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests"
    )

    class Meta:
        verbose_name = _("charge action request")
        verbose_name_plural = _("charge action requests")
        indexes = [
            models.Index(fields=["state", "created_at"], name="paycharge_action_state"),
            models.Index(fields=["charge", "kind", "state"], name="paycharge_action_charge"),
            # The admin's list, newest first: read in order, never sorted whole.
            models.Index(fields=["-created_at", "-id"], name="paycharge_action_created"),
        ]
        permissions = [
            ("capture_charge", _("Can capture authorized charges")),
            ("cancel_charge", _("Can cancel charges")),
            ("refund_charge", _("Can refund charges")),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.idempotency_key} ({self.get_state_display()})"

    @property
    def amount(self) -> Any:
        """The amount asked for (refunds and partial captures), from the stored parameters."""
        return (self.params or {}).get("amount")
