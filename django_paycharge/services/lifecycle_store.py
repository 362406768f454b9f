"""Store refunds and cancels read from the gateway, and send their signals after commit.

Several paths store the same refund at the same moment (the service's own
answer, a ``refund_finished`` webhook, a sync): each store locks the row (or
loses the insert race and then locks it), and a status only moves forward,
so a stale read never takes a refund back to ``pending``. Signals go through
:func:`django_paycharge.signals.send`: once the change is committed on the
alias it was written to, and a failing receiver is logged and never undoes it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import IntegrityError, router, transaction
from django.utils import timezone

from .. import signals
from ..client.lifecycle_types import Cancel as RemoteCancel
from ..client.lifecycle_types import Refund as RemoteRefund
from ..client.lifecycle_types import operation_rank
from ..models import Cancel, Charge, Refund
from .upsert import _without_nul

_MAX_BIGINT = 2**63 - 1
_MAX_FORMATTED = Decimal(10) ** 20  # DecimalField(max_digits=24, decimal_places=4)


def _text(value: Any, max_length: int) -> str | None:
    """A value that fits the column, else None (the value stays in ``raw``)."""
    if not isinstance(value, str) or len(value) > max_length:
        return None
    return str(_without_nul(value))


def _common(remote: RemoteRefund | RemoteCancel, charge: Charge) -> dict[str, Any]:
    return {
        "charge": charge,
        "account": charge.account,
        "store_id": remote.store_id or charge.store_id,
        "status": _text(remote.status, 32) or "",
        "status_rank": operation_rank(remote.status),
        "error": _without_nul(remote.error.raw) if remote.error is not None else None,
        "metadata": _without_nul(remote.metadata),
        "mode": _text(remote.mode, 16) or "",
        "created_on": remote.created_on,
        "updated_on": remote.updated_on,
        "raw": _without_nul(remote.raw),
        "synced_at": timezone.now(),
    }


def _refund_values(remote: RemoteRefund, charge: Charge) -> dict[str, Any]:
    amount = (
        remote.amount if remote.amount is not None and abs(remote.amount) <= _MAX_BIGINT else None
    )
    formatted = remote.amount_formatted
    if formatted is not None and (not formatted.is_finite() or abs(formatted) >= _MAX_FORMATTED):
        formatted = None
    return {
        **_common(remote, charge),
        "amount": amount,
        "currency": _text(remote.currency, 3),
        "amount_formatted": formatted,
        "reason": _text(remote.reason, 64),
        "message": _text(remote.message, 100_000),
    }


def _upsert(
    model: type[Any], gateway_id: Any, values: dict[str, Any]
) -> tuple[Any, str | None, bool]:
    """Lock or insert the row, move it forward; ``(row, previous status, created)``."""
    with transaction.atomic(using=router.db_for_write(model)):
        row = model.objects.select_for_update().filter(gateway_id=gateway_id).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = model.objects.create(
                        gateway_id=gateway_id, first_seen_at=values["synced_at"], **values
                    )
                return row, None, True
            except IntegrityError:  # stored by a concurrent path a moment ago
                row = model.objects.select_for_update().get(gateway_id=gateway_id)
        previous = row.status
        if values["status_rank"] < row.status_rank:
            model.objects.filter(pk=row.pk).update(synced_at=values["synced_at"])
            return row, previous, False
        for name, value in values.items():
            setattr(row, name, value)
        row.save()
    return row, previous, False


def store_refund(remote: RemoteRefund, *, charge: Charge) -> Refund:
    """Insert or move forward the mirror of one refund of ``charge``; signals after commit."""
    alias = router.db_for_write(Refund)
    with transaction.atomic(using=alias):
        refund, previous, created = _upsert(Refund, remote.id, _refund_values(remote, charge))
        if created:
            signals.send(
                signals.refund_created, sender=Refund, using=alias, refund=refund, charge=charge
            )
        if created or previous != refund.status:
            signals.send(
                signals.refund_status_changed,
                sender=Refund,
                using=alias,
                refund=refund,
                charge=charge,
                previous_status=previous,
                status=refund.status,
            )
    result: Refund = refund
    return result


def store_cancel(remote: RemoteCancel, *, charge: Charge) -> Cancel:
    """Insert or move forward the mirror of one cancel; ``charge_canceled`` when it succeeds."""
    alias = router.db_for_write(Cancel)
    with transaction.atomic(using=alias):
        cancel, previous, _created = _upsert(Cancel, remote.id, _common(remote, charge))
        if cancel.status == "successful" and previous != "successful":
            signals.send(
                signals.charge_canceled, sender=Charge, using=alias, charge=charge, cancel=cancel
            )
    result: Cancel = cancel
    return result
