"""``manage.py paycharge_refund CHARGE_ID``: refund a charge, in full or in part."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from ... import services
from ...client.vocabulary import REFUND_REASONS
from ...money import format_money
from ._charge_action import ChargeActionCommand


class Command(ChargeActionCommand):
    help = (
        "Refund a successful charge: all that is left, or --amount (in the currency's "
        "smallest unit). Exactly once: a lost answer is retried with the same key."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--amount", type=int, help="Minor units (default: all that is left).")
        parser.add_argument("--reason", choices=REFUND_REASONS)
        parser.add_argument("--message", help="A note kept with the refund.")

    def handle(self, *args: Any, **options: Any) -> None:
        charge = self.charge(options)
        refund = services.refund_charge(
            charge,
            amount=options["amount"],
            reason=options["reason"],
            message=options["message"],
            idempotency_key=options["idempotency_key"],
            requested_by=self.who(),
        )
        charge.refresh_from_db()  # read from the gateway by the service
        self.stdout.write(
            self.style.SUCCESS(
                f"Refund {refund.gateway_id} of {format_money(refund.amount, refund.currency)}: "
                f"{refund.status}. Left to refund: "
                f"{format_money(services.refundable_amount(charge), refund.currency)}."
            )
        )
