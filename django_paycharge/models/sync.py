from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class SyncCheckpoint(models.Model):
    """Where the syncs of one resource of one account and store got to.

    A run of the charges sync reads creation-time windows side by side; each
    window keeps its own place (:class:`SyncWindow`), written with every page,
    so a run that crashes or is killed resumes without re-reading finished
    windows.
    """

    class Resource(models.TextChoices):
        CHARGES = "charges", _("Charges")
        WEBHOOKS = "webhooks", _("Webhook configurations")

    account = models.CharField(_("account"), max_length=64)
    # "" stands for all stores the account's token reaches.
    store_key = models.CharField(_("store"), max_length=36, blank=True)
    resource = models.CharField(_("resource"), max_length=16, choices=Resource.choices)
    # Creation time of the newest item a completed run has seen.
    high_water = models.DateTimeField(_("high-water mark"), null=True, blank=True)
    # The run in progress: its lower bound, whether it is full, and when it started
    # (charges created later belong to its last, open-ended window).
    run_from = models.DateTimeField(null=True, blank=True)
    run_full = models.BooleanField(default=False)
    run_started_at = models.DateTimeField(null=True, blank=True)
    # Who holds the account's sync lock for this run: host and process, for messages.
    run_holder = models.CharField(_("run by"), max_length=200, blank=True)
    last_completed_at = models.DateTimeField(_("last completed"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("sync checkpoint")
        verbose_name_plural = _("sync checkpoints")
        constraints = [
            models.UniqueConstraint(
                fields=["account", "store_key", "resource"], name="paycharge_checkpoint_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.account}/{self.store_key or '*'}/{self.resource}"

    @property
    def in_progress(self) -> bool:
        return self.run_started_at is not None


class SyncWindow(models.Model):
    """One creation-time window of a sync run in progress: ``[start, end)`` and its place.

    ``start`` None reads from the first charge; ``end`` None has no upper
    bound (the run's last window, which also sees charges created while the
    run goes on). ``cursor`` is the id of the last charge stored, and
    ``position`` its creation time. A window that turns out dense gives the
    rest of its range to new windows: its ``end`` moves down and theirs
    cover the rest, in the same transaction.
    """

    checkpoint = models.ForeignKey(
        SyncCheckpoint, on_delete=models.CASCADE, related_name="windows", verbose_name=_("sync")
    )
    start = models.DateTimeField(_("from"), null=True, blank=True)
    end = models.DateTimeField(_("until"), null=True, blank=True)
    cursor = models.CharField(_("cursor"), max_length=64, blank=True)
    position = models.DateTimeField(_("position"), null=True, blank=True)
    pages = models.PositiveIntegerField(_("pages"), default=0)
    rows = models.PositiveIntegerField(_("rows"), default=0)
    done = models.BooleanField(_("done"), default=False)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("sync window")
        verbose_name_plural = _("sync windows")
        ordering = ["pk"]

    def __str__(self) -> str:
        start = self.start.isoformat() if self.start else "…"
        end = self.end.isoformat() if self.end else "…"
        return f"{self.checkpoint}: [{start}, {end})"
