from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .payload import PayloadEncoder


class WebhookConfiguration(models.Model):
    """A webhook configuration as the gateway last told us.

    The gateway's ``auth_token`` is a secret: only its SHA-256 digest is kept,
    which is all the receiver needs to check a delivery.
    """

    gateway_id = models.UUIDField(_("webhook id"), unique=True)
    account = models.CharField(_("account"), max_length=64, default="default")
    platform_id = models.UUIDField(_("platform id"), null=True, blank=True)
    merchant_id = models.UUIDField(_("merchant id"), null=True, blank=True)
    store_id = models.UUIDField(_("store id"), null=True, blank=True, db_index=True)
    triggers = models.JSONField(_("triggers"), default=list, encoder=PayloadEncoder)
    url = models.URLField(_("url"), max_length=2000, null=True, blank=True)
    # NULL: the gateway did not say (the SDKs' recorded configurations often omit it).
    active = models.BooleanField(_("active"), null=True, blank=True, default=None)
    is_integration = models.BooleanField(_("integration"), null=True, blank=True, default=None)
    created_on = models.DateTimeField(_("created on"), null=True, blank=True)
    updated_on = models.DateTimeField(_("updated on"), null=True, blank=True)
    auth_token_digest = models.CharField(max_length=64, blank=True, editable=False)
    raw = models.JSONField(_("raw payload"), default=dict, encoder=PayloadEncoder)
    synced_at = models.DateTimeField(_("synced at"))
    # Set when a sync no longer finds the configuration on the gateway.
    removed_at = models.DateTimeField(_("removed from the gateway at"), null=True, blank=True)

    class Meta:
        verbose_name = _("webhook configuration")
        verbose_name_plural = _("webhook configurations")
        ordering = ["-created_on"]
        permissions = [("call_gateway_webhooks", _("Can sync webhook configurations"))]

    def __str__(self) -> str:
        return self.url or str(self.gateway_id)

    @property
    def is_usable(self) -> bool:
        # Unknown is not "inactive": only an explicit false stops using a configuration.
        return self.active is not False and self.removed_at is None


class WebhookDelivery(models.Model):
    """One genuine delivery received from the gateway, stored before it is processed.

    Processing is leased: whoever claims a delivery records when, and until
    when the claim holds (``PAYCHARGE["WEBHOOK_LEASE_SECONDS"]``). A claim past
    its lease belongs to a process that died; the next worker or command run
    takes it over.
    """

    class Status(models.TextChoices):
        RECEIVED = "received", _("Received")
        PROCESSING = "processing", _("Processing")
        PROCESSED = "processed", _("Processed")
        IGNORED = "ignored", _("Ignored (unknown event)")
        FAILED = "failed", _("Failed")

    account = models.CharField(_("account"), max_length=64, default="default")
    event = models.CharField(_("event"), max_length=64, blank=True)
    delivery_id = models.CharField(_("delivery id"), max_length=64, null=True, blank=True)
    # The delivery id, or a digest of event and body when the gateway sent no id;
    # unique per account (two accounts' deliveries never dedupe each other).
    dedupe_key = models.CharField(max_length=80)
    body = models.TextField(_("body"))
    headers = models.JSONField(_("headers"), default=dict, encoder=PayloadEncoder)
    received_at = models.DateTimeField(_("received at"), db_index=True)
    status = models.CharField(
        _("status"), max_length=16, choices=Status.choices, default=Status.RECEIVED
    )
    attempts = models.PositiveIntegerField(_("processing attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    processed_at = models.DateTimeField(_("processed at"), null=True, blank=True)
    claimed_at = models.DateTimeField(_("last claimed at"), null=True, blank=True)
    # Set while a claim holds; cleared when its processing ends.
    lease_until = models.DateTimeField(_("lease until"), null=True, blank=True)
    claimed_by = models.CharField(_("claimed by"), max_length=200, blank=True)
    #: The gateway's id of the last answer its processing got (the re-read of its charge).
    gateway_request_id = models.CharField(_("gateway request id"), max_length=100, blank=True)
    charge = models.ForeignKey(
        "Charge", null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        ordering = ["-received_at", "-id"]
        indexes = [
            models.Index(fields=["status", "received_at"], name="paycharge_delivery_status"),
            # One event's deliveries, newest first (the admin's filter): read in order.
            models.Index(fields=["event", "-received_at"], name="paycharge_delivery_event"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "dedupe_key"], name="paycharge_delivery_once"
            )
        ]
        permissions = [("reprocess_webhookdelivery", _("Can reprocess webhook deliveries"))]

    def __str__(self) -> str:
        return f"{self.event or '?'} {self.delivery_id or self.dedupe_key[:12]}"

    def awaits_processing(self, now: datetime | None = None) -> bool:
        """Nobody is processing it and it is not done: received, or stuck."""
        return self.status == self.Status.RECEIVED or self.is_stuck(now)

    def is_stuck(self, now: datetime | None = None) -> bool:
        """Claimed, and the claim's lease ran out: its process died or hangs.

        A ``processing`` row without a lease was claimed before leases existed
        (an upgrade): it is stuck too.
        """
        if self.status != self.Status.PROCESSING:
            return False
        return self.lease_until is None or self.lease_until <= (now or timezone.now())
