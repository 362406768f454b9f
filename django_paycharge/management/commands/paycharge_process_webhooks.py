"""``manage.py paycharge_process_webhooks``: process stored deliveries not processed yet.

That includes stuck ones: claimed by a process that died (its lease ran out,
``PAYCHARGE["WEBHOOK_LEASE_SECONDS"]``), which this run takes over.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from ...models import WebhookDelivery
from ...services.webhooks import deliveries, leases
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Process webhook deliveries still waiting, or stuck with a dead worker "
        "(and failed ones with --failed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--failed",
            action="store_true",
            help=f"Also retry failed deliveries (up to {deliveries.MAX_ATTEMPTS} attempts each).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        counts: Counter[str] = Counter()
        now = timezone.now()
        given_up = leases.give_up_exhausted(now)
        stuck = WebhookDelivery.objects.filter(leases.stuck(now)).count()
        by = leases.claimant("paycharge_process_webhooks")
        for pk in deliveries.pending_deliveries(failed=options["failed"]):
            counts[deliveries.process_delivery(pk, retry_failed=options["failed"], by=by)] += 1
        summary = ", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "none"
        self.stdout.write(f"Webhook deliveries processed: {summary}.")
        if stuck:
            self.stdout.write(f"{stuck} were stuck (their worker died) and were taken over.")
        if given_up:
            self.stdout.write(
                f"{given_up} stuck deliveries had died {leases.MAX_ATTEMPTS} times and were "
                "left failed; reprocess them from the admin once the cause is fixed."
            )
        if counts["failed"] or given_up:
            failed = counts["failed"] + given_up
            raise CommandError(f"{failed} deliveries failed; see the admin's log.")
