"""``manage.py paycharge_process_webhooks``: process stored deliveries not processed yet."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...services import deliveries
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = "Process webhook deliveries still waiting (and failed ones with --failed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--failed",
            action="store_true",
            help=f"Also retry failed deliveries (up to {deliveries.MAX_ATTEMPTS} attempts each).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        counts: Counter[str] = Counter()
        for pk in deliveries.pending_deliveries(failed=options["failed"]):
            counts[deliveries.process_delivery(pk, retry_failed=options["failed"])] += 1
        summary = ", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "none"
        self.stdout.write(f"Webhook deliveries processed: {summary}.")
        if counts["failed"]:
            raise CommandError(f"{counts['failed']} deliveries failed; see the admin's log.")
