"""The table a shop's own webhook view writes: the body and when it came, nothing else."""

from __future__ import annotations

from django.db import models


class Receipt(models.Model):
    body = models.TextField()
    received_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"receipt {self.pk}"
