"""What the capture, cancel and refund commands share: find the charge, report the result."""

from __future__ import annotations

import getpass
import uuid
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...models import Charge
from ._base import PayChargeCommand


class ChargeActionCommand(PayChargeCommand):
    """``manage.py paycharge_<action> CHARGE_ID [--idempotency-key KEY]``."""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("charge_id", help="The charge's id (UUID) in the mirror.")
        parser.add_argument(
            "--idempotency-key",
            help="Your own key: running the command again with it acts once "
            "(default: a new key each run).",
        )

    def charge(self, options: dict[str, Any]) -> Charge:
        try:
            gateway_id = uuid.UUID(options["charge_id"])
        except ValueError:
            raise CommandError(f"{options['charge_id']!r} is not a charge id (a UUID).") from None
        charge = Charge.objects.filter(gateway_id=gateway_id).first()
        if charge is None:
            raise CommandError(
                f"No charge {gateway_id} in the mirror: run paycharge_sync, or check the id."
            )
        return charge

    def who(self) -> str:
        return who()


def who() -> str:
    """Recorded as a request's ``requested_by``: the operating-system user."""
    try:
        return f"command:{getpass.getuser()}"
    except (KeyError, OSError):
        return "command"
