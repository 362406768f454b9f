"""``manage.py paycharge_prune_webhooks``: keep the delivery log from growing forever."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...services.webhooks import prune_deliveries
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Delete processed, ignored and failed webhook deliveries received more than "
        "--older-than days ago (deliveries not processed yet are kept)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=int, required=True, metavar="DAYS")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["older_than"] < 1:
            raise CommandError("--older-than must be at least 1 day.", returncode=2)
        deleted, kept = prune_deliveries(older_than_days=options["older_than"])
        self.stdout.write(f"Deleted {deleted} webhook deliveries.")
        if kept:
            self.stdout.write(
                f"Kept {kept} older deliveries not processed yet: "
                "run paycharge_process_webhooks to process them."
            )
