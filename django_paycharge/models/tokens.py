from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .payload import PayloadEncoder


class TransactionTokenInfo(models.Model):
    """What a read of one transaction token told us: its payment type, or that it is gone; and
    for a saved card (a ``recurring`` token), the rest of what the gateway said of it.

    A cache for :func:`~django_paycharge.services.fill_payment_types`: each
    token is read once, however many charges use it (a recurring token pays
    for many). A token the gateway answered 404 for is recorded and not read
    again; one that failed otherwise is tried again on later runs, after the
    tokens never tried.

    The mirror of a saved card (written by ``services.mirror``, the one writer, from a
    token event or a read): every field NULL when unknown, ``raw`` as received. A deleted
    (or replaced) token is kept, ``active`` False: ``status_rank`` 1 then, so a stale read
    never makes it active again.
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
    type = models.CharField(_("token type"), max_length=32, null=True, blank=True)
    mode = models.CharField(_("mode"), max_length=16, null=True, blank=True)
    active = models.BooleanField(_("active"), null=True, blank=True)
    status_rank = models.PositiveSmallIntegerField(_("status rank"), default=0, editable=False)
    usage_limit = models.CharField(_("usage limit"), max_length=16, null=True, blank=True)
    cvv_authorization_enabled = models.BooleanField(
        _("CVV authorization required"), null=True, blank=True
    )
    cvv_authorization_status = models.CharField(
        _("CVV authorization"), max_length=16, null=True, blank=True
    )
    #: The token this one replaced (a renewal names the old one).
    previous_id = models.UUIDField(_("replaces token"), null=True, blank=True, db_index=True)
    card_brand = models.CharField(_("card brand"), max_length=32, null=True, blank=True)
    card_last_four = models.CharField(_("last four digits"), max_length=4, null=True, blank=True)
    card_exp_month = models.PositiveSmallIntegerField(_("expiry month"), null=True, blank=True)
    card_exp_year = models.PositiveSmallIntegerField(_("expiry year"), null=True, blank=True)
    created_on = models.DateTimeField(_("created on"), null=True, blank=True)
    last_used_on = models.DateTimeField(_("last used on"), null=True, blank=True)
    raw = models.JSONField(_("raw payload"), default=dict, blank=True, encoder=PayloadEncoder)
    synced_at = models.DateTimeField(_("synced at"), null=True, blank=True)
    first_seen_at = models.DateTimeField(_("first seen at"), null=True, blank=True)

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
