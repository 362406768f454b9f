"""API answers kept per ``Idempotency-Key`` for replays (see ``api/idempotency``)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .payload import PayloadEncoder


class ApiIdempotencyRecord(models.Model):
    """The first request made with one caller's key: in progress, or its answer.

    Only digests of the key and of the request are kept: the key may be a value
    the caller considers private, and the body holds payment details.
    """

    scope = models.CharField(_("scope"), max_length=150)
    key_digest = models.CharField(_("key digest"), max_length=64)
    fingerprint = models.CharField(_("request fingerprint"), max_length=64)
    #: None while the first request is still running.
    status_code = models.PositiveSmallIntegerField(_("status code"), null=True, blank=True)
    response = models.JSONField(_("response"), null=True, blank=True, encoder=PayloadEncoder)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True, db_index=True)
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)

    class Meta:
        verbose_name = _("API idempotency record")
        verbose_name_plural = _("API idempotency records")
        constraints = [
            models.UniqueConstraint(fields=("scope", "key_digest"), name="paycharge_api_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.key_digest[:12]} ({self.status_code or 'in progress'})"
