from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class TransactionTokenInfo(models.Model):
    """What a read of one transaction token told us: its payment type, or that it is gone.

    A cache for :func:`~django_paycharge.services.fill_payment_types`: each
    token is read once, however many charges use it (a recurring token pays
    for many). A token the gateway answered 404 for is recorded and not read
    again; one that failed otherwise is tried again on later runs, after the
    tokens never tried.
    """

    class State(models.TextChoices):
        KNOWN = "known", _("Payment type known")
        NOT_FOUND = "not_found", _("Not on the gateway")
        FAILED = "failed", _("Read failed; will be tried again")

    account = models.CharField(_("account"), max_length=64)
    token_id = models.UUIDField(_("transaction token id"))
    store_id = models.UUIDField(_("store id"), null=True, blank=True)
    payment_type = models.CharField(_("payment type"), max_length=32, blank=True)
    state = models.CharField(_("state"), max_length=16, choices=State.choices)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    checked_at = models.DateTimeField(_("checked at"))

    class Meta:
        verbose_name = _("transaction token")
        verbose_name_plural = _("transaction tokens")
        constraints = [
            models.UniqueConstraint(
                fields=["account", "token_id"], name="paycharge_tokeninfo_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.token_id} ({self.payment_type or self.state})"
