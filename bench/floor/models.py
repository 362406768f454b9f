"""The table a shop's own webhook view writes: the body and when it came, nothing else."""

from __future__ import annotations

from django.db import models


class Receipt(models.Model):
    body = models.TextField()
    received_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"receipt {self.pk}"


class PlainPayment(models.Model):
    """What a shop's own checkout writes around a raw POST: the attempt, committed before the
    call (its key is the Idempotency-Key: a retry is the same charge), then the answer."""

    key = models.UUIDField(unique=True)
    amount = models.PositiveIntegerField()
    currency = models.CharField(max_length=3)
    status = models.CharField(max_length=16)
    charge_id = models.UUIDField(null=True)
    charge_status = models.CharField(max_length=32, blank=True)
    answer = models.JSONField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"payment {self.key}"
