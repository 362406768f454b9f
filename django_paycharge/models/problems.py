"""Failures the shop's owner must fix, one row per account and kind (no secret in them)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class OwnerProblem(models.Model):
    """A failure that is the owner's to fix, as last met: the gateway refused the app token
    (401) or what it may do (403), knows no such store (404), a setting is missing, or the
    gateway could not be reached. Customers were told payments are unavailable.

    ``settings_digest`` is a digest of the ``PAYCHARGE`` setting when it was met: once the
    settings change, the problem is no longer counted (the owner changed something).
    """

    class Kind(models.TextChoices):
        CREDENTIALS = "credentials", _("Credentials refused")
        PERMISSIONS = "permissions", _("App token not allowed")
        STORE = "store", _("No such store")
        SETTINGS = "settings", _("Setting missing or malformed")
        UNREACHABLE = "unreachable", _("Gateway unreachable")

    account = models.CharField(_("account"), max_length=64)
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    #: Our own message (never the gateway's text, never a secret).
    detail = models.TextField(_("detail"), blank=True)
    http_status = models.PositiveSmallIntegerField(_("HTTP status"), null=True, blank=True)
    code = models.CharField(_("gateway code"), max_length=100, blank=True)
    settings_digest = models.CharField(_("settings digest"), max_length=16, blank=True)
    count = models.PositiveIntegerField(_("times met"), default=0)
    first_seen_at = models.DateTimeField(_("first met at"))
    last_seen_at = models.DateTimeField(_("last met at"))

    class Meta:
        verbose_name = _("owner problem")
        verbose_name_plural = _("owner problems")
        constraints = [
            models.UniqueConstraint(fields=["account", "kind"], name="paycharge_problem_unique")
        ]

    def __str__(self) -> str:
        return f"{self.account}: {self.get_kind_display()}"
