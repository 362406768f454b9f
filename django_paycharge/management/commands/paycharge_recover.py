"""``manage.py paycharge_recover``: settle charge requests left in flight."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from ... import services
from ...models import ChargeRequest
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Resend charge requests left pending by a crash or a lost answer, with their "
        "idempotency keys: each ends with exactly one charge, or is marked failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=float,
            default=30.0,
            metavar="SECONDS",
            help="Only requests at least this old (default 30), so live requests are left alone.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        older_than = timedelta(seconds=options["older_than"])
        # Counted first: "still pending: 0" must not hide the requests this run left alone.
        younger = ChargeRequest.objects.filter(
            state=ChargeRequest.State.PENDING, created_at__gt=timezone.now() - older_than
        ).count()
        counts = services.recover_charge_requests(older_than=older_than)
        self.stdout.write(
            f"Charge requests settled: {counts['settled']}, failed: {counts['failed']}, "
            f"still pending: {counts['still_pending']}; left alone: {younger} younger than "
            f"{options['older_than']:g} s (perhaps still in flight: run again later)."
        )
        if counts["still_pending"]:
            raise CommandError(
                f"{counts['still_pending']} charge requests are still pending: the gateway "
                "could not be reached. Run paycharge_recover again later."
            )
