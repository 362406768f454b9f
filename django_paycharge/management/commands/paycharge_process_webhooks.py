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
from ...outbox import MAX_ATTEMPTS, claimant, give_up_exhausted, stuck
from ...services.webhooks import pending_deliveries, process_delivery
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
            help=f"Also retry failed deliveries (up to {MAX_ATTEMPTS} attempts each).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        counts: Counter[str] = Counter()
        now = timezone.now()
        given_up = give_up_exhausted(now)
        taken_over = WebhookDelivery.objects.filter(stuck(now)).count()
        by = claimant("paycharge_process_webhooks")
        for pk in pending_deliveries(failed=options["failed"]):
            counts[process_delivery(pk, retry_failed=options["failed"], by=by)] += 1
        summary = ", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "none"
        self.stdout.write(f"Webhook deliveries processed: {summary}.")
        if taken_over:
            self.stdout.write(f"{taken_over} were stuck (their worker died) and were taken over.")
        if given_up:
            self.stdout.write(
                f"{given_up} stuck deliveries had died {MAX_ATTEMPTS} times and were "
                "left failed; reprocess them from the admin once the cause is fixed."
            )
        if counts["failed"] or given_up:
            failed = counts["failed"] + given_up
            raise CommandError(f"{failed} deliveries failed; see the admin's log.")
