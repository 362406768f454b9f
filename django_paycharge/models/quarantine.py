from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class QuarantinedItem(models.Model):
    """An item the gateway sent that could not be stored (no usable id), kept as received.

    The payload is kept as JSON text (ASCII, escapes as sent), not as a JSON
    column: the item may hold what a JSON column refuses (a NUL, say), and it
    must never be lost. The same payload seen again is counted on its row, not
    stored twice. Every sync tries the unresolved ones again; one that can be
    stored by then is stored and marked resolved.

    An item without a usable id can never be stored from its own payload: staff
    settle it, by having the app read the resource from the gateway by the id
    they found (``resolution="stored"``), or by dismissing it with a reason
    (``resolution="dismissed"``, the reason kept in ``resolution_note``). A
    sync reports each item once (``reported_at``), and those it can still try
    (``retriable``) until they are stored.
    """

    class Resource(models.TextChoices):
        CHARGE = "charge", _("Charge")
        WEBHOOK = "webhook", _("Webhook configuration")
        REFUND = "refund", _("Refund")
        CANCEL = "cancel", _("Cancel")
        SUBSCRIPTION = "subscription", _("Subscription")
        SCHEDULED_PAYMENT = "scheduled_payment", _("Scheduled payment")

    class Resolution(models.TextChoices):
        STORED = "stored", _("Stored")
        DISMISSED = "dismissed", _("Dismissed")

    account = models.CharField(_("account"), max_length=64)
    resource = models.CharField(_("resource"), max_length=32, choices=Resource.choices)
    payload = models.TextField(_("payload as received"))
    payload_digest = models.CharField(max_length=64, editable=False)
    reason = models.TextField(_("reason"))
    source = models.CharField(_("found by"), max_length=32, blank=True)
    times_seen = models.PositiveIntegerField(_("times seen"), default=1)
    attempts = models.PositiveIntegerField(_("attempts to store it"), default=1)
    first_seen_at = models.DateTimeField(_("first seen at"))
    last_seen_at = models.DateTimeField(_("last seen at"))
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)
    resolved_id = models.UUIDField(_("stored as"), null=True, blank=True)
    resolution = models.CharField(
        _("resolution"), max_length=16, choices=Resolution.choices, blank=True
    )
    #: Why it was dismissed, or how it was stored: kept with the item.
    resolution_note = models.TextField(_("resolution note"), blank=True)
    resolved_by = models.CharField(_("resolved by"), max_length=150, blank=True)
    #: Its payload has a usable id: a later sync may store it (a refund whose charge
    #: is not mirrored yet). Without one, only staff can settle it.
    retriable = models.BooleanField(_("retried by every sync"), default=False)
    #: When a sync's result first counted it (its exit status reports each item once).
    reported_at = models.DateTimeField(_("reported at"), null=True, blank=True)

    class Meta:
        verbose_name = _("quarantined item")
        verbose_name_plural = _("quarantined items")
        ordering = ["-last_seen_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "resource", "payload_digest"],
                name="paycharge_quarantine_unique_payload",
            )
        ]
        indexes = [
            models.Index(fields=["resolved_at", "account"], name="paycharge_quarantine_open"),
        ]

    def __str__(self) -> str:
        return f"{self.get_resource_display()} ({self.reason[:60]})"
