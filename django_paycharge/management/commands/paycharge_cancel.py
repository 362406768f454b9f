"""``manage.py paycharge_cancel CHARGE_ID``: cancel a charge."""

from __future__ import annotations

from typing import Any

from ... import services
from ._charge_action import ChargeActionCommand


class Command(ChargeActionCommand):
    help = (
        "Cancel a charge (an authorization, an unpaid charge, or a card payment not yet settled)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        charge = self.charge(options)
        cancel = services.cancel_charge(
            charge, idempotency_key=options["idempotency_key"], requested_by=self.who()
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Cancel {cancel.gateway_id} of charge {charge.gateway_id}: {cancel.status}."
            )
        )
