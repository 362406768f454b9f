"""Announcements: each change the app announces, recorded with the change, per receiver.

One row is one receiver's hearing of one change (an outbox row): written in
the transaction that makes the change, run after it commits, run again until
the receiver returns (see ``outbox/announcements.py``). The rows of one
change share its ``event_id``, which each receiver gets.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .payload import PayloadEncoder


class Announcement(models.Model):
    """One receiver's hearing of one announced change, leased like a webhook delivery."""

    class Status(models.TextChoices):
        # Member names are the lease vocabulary shared with webhook deliveries
        # (outbox/leases.py): RECEIVED waits, PROCESSING is claimed or backing off.
        RECEIVED = "waiting", _("Waiting")
        PROCESSING = "running", _("Running")
        PROCESSED = "heard", _("Heard")
        FAILED = "not_heard", _("Not heard")
        DISMISSED = "dismissed", _("Dismissed by staff")

    #: Runs of one receiver (the first included) before it is left "not heard".
    LEASE_ATTEMPTS = 8

    # Read by the unique index on (event id, receiver): an index of its own only cost writes.
    event_id = models.UUIDField(_("event id"))
    signal = models.CharField(_("signal"), max_length=64)
    receiver = models.CharField(_("receiver"), max_length=255)
    # The sender's model label ("django_paycharge.charge").
    sender = models.CharField(_("sender"), max_length=100)
    # What the receiver is called with: plain values, and rows as {"model", "pk"}.
    arguments = models.JSONField(_("arguments"), default=dict, encoder=PayloadEncoder)
    created_at = models.DateTimeField(_("announced at"))
    status = models.CharField(
        _("status"), max_length=16, choices=Status.choices, default=Status.RECEIVED
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    # When the last run ended: heard, or left not heard.
    processed_at = models.DateTimeField(_("last run ended at"), null=True, blank=True)
    claimed_at = models.DateTimeField(_("last started at"), null=True, blank=True)
    # While running: when the run is taken over; after an error: when it is run again.
    lease_until = models.DateTimeField(_("lease until"), null=True, blank=True)
    claimed_by = models.CharField(_("run by"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("announcement")
        verbose_name_plural = _("announcements")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "lease_until"], name="paycharge_announce_due"),
            models.Index(fields=["created_at"], name="paycharge_announce_created"),
            # One signal's announcements, newest first (the admin's filter): read in order.
            models.Index(fields=["signal", "-created_at"], name="paycharge_announce_signal"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["event_id", "receiver"], name="paycharge_announce_once")
        ]
        permissions = [("retry_announcement", _("Can retry or dismiss announcements"))]

    def __str__(self) -> str:
        return f"{self.signal} → {self.receiver}"

    @property
    def retrying(self) -> bool:
        """Its receiver raised, and it waits for its next run (the lease is the back-off)."""
        return self.status == self.Status.PROCESSING and not self.claimed_by
