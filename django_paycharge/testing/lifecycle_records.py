"""The fake's refunds and cancels and their JSON shapes (the SDK's ``Refund`` and ``Cancel``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from ._common import Json, formatted, iso
from .records import Charge


@dataclass(slots=True)
class RefundRecord:
    """A refund of a charge; ``pending`` until processed."""

    id: str
    charge: Charge
    amount: int
    currency: str
    created: dt.datetime
    reason: str | None = None
    message: str | None = None
    metadata: Json = field(default_factory=dict)
    status: str = "pending"
    error: Json | None = None
    updated: dt.datetime | None = None

    @property
    def sort_key(self) -> tuple[dt.datetime, str]:
        """Position in the lists: creation time, then id."""
        return (self.created, self.id)

    def to_json(self) -> Json:
        """The refund resource as the gateway sends it."""
        return {
            "id": self.id,
            "store_id": self.charge.store.id,
            "charge_id": self.charge.id,
            "status": self.status,
            "amount": self.amount,
            "currency": self.currency,
            "amount_formatted": formatted(self.amount, self.currency),
            "reason": self.reason,
            "message": self.message,
            "error": dict(self.error) if self.error else None,
            "metadata": dict(self.metadata),
            "mode": self.charge.mode,
            "created_on": iso(self.created),
            "updated_on": iso(self.updated or self.created),
        }


@dataclass(slots=True)
class CancelRecord:
    """A cancel of a charge; ``pending`` until processed."""

    id: str
    charge: Charge
    created: dt.datetime
    metadata: Json = field(default_factory=dict)
    status: str = "pending"
    error: Json | None = None
    updated: dt.datetime | None = None

    @property
    def sort_key(self) -> tuple[dt.datetime, str]:
        """Position in the lists: creation time, then id."""
        return (self.created, self.id)

    def to_json(self) -> Json:
        """The cancel resource as the gateway sends it."""
        return {
            "id": self.id,
            "charge_id": self.charge.id,
            "store_id": self.charge.store.id,
            "status": self.status,
            "error": dict(self.error) if self.error else None,
            "metadata": dict(self.metadata),
            "mode": self.charge.mode,
            "created_on": iso(self.created),
            "updated_on": iso(self.updated or self.created),
        }
