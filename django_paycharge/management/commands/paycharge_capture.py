"""``manage.py paycharge_capture CHARGE_ID``: capture an authorized charge."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from ... import services
from ...money import format_money
from ._charge_action import ChargeActionCommand


class Command(ChargeActionCommand):
    help = "Capture an authorized charge: all of it, or --amount (the currency's smallest unit)."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--amount", type=int, help="Minor units (default: everything).")

    def handle(self, *args: Any, **options: Any) -> None:
        charge = services.capture_charge(
            self.charge(options),
            amount=options["amount"],
            idempotency_key=options["idempotency_key"],
            requested_by=self.who(),
        )
        charged = format_money(charge.charged_amount, charge.charged_currency)
        self.stdout.write(
            self.style.SUCCESS(f"Charge {charge.gateway_id} captured ({charged}): {charge.status}.")
        )
