from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class SyncCheckpoint(models.Model):
    """Where the last sync of one resource of one account and store got to.

    Written after every page, so a sync that crashes resumes from its last
    page instead of starting again.
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
    # The run in progress: its lower bound, the last id it stored, and whether it is full.
    run_from = models.DateTimeField(null=True, blank=True)
    run_cursor = models.CharField(max_length=64, blank=True)
    run_full = models.BooleanField(default=False)
    run_started_at = models.DateTimeField(null=True, blank=True)
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
