"""``manage.py paycharge_recover``: settle requests that move money left in flight."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ... import services
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Ask the gateway, with their own idempotency keys, about requests that move money "
        "(creates, captures, cancels, refunds, metadata updates) left open by a crash or a lost "
        "answer: each ends done exactly once, or refused. Requests older than the maximum age "
        "are abandoned (never sent); abandoned ones whose outcome is unknown are looked for."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=float,
            default=30.0,
            metavar="SECONDS",
            help="Only requests untouched this long (default 30), so live ones are left alone.",
        )
        parser.add_argument(
            "--max-age",
            type=float,
            default=None,
            metavar="SECONDS",
            help="Abandon open requests older than this instead of sending them "
            "(default PAYCHARGE['CHARGE_REQUEST_MAX_AGE'], 900).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        max_age = options["max_age"]
        if max_age is not None and max_age <= 0:
            raise CommandError("--max-age must be a positive number of seconds.")
        result = services.recover_requests(
            older_than=timedelta(seconds=options["older_than"]),
            max_age=timedelta(seconds=max_age) if max_age is not None else None,
        )
        self.stdout.write(
            f"Requests settled: {result.settled}, failed: {result.failed}, "
            f"still pending: {result.still_pending}, abandoned: {result.abandoned}, "
            f"found after abandonment: {result.found}; left alone: {result.left_alone} "
            f"younger than {options['older_than']:g} s (perhaps still in flight: run again later)."
        )
        for kind, counts in sorted(result.by_kind.items()):
            shown = ", ".join(f"{name.replace('_', ' ')}: {n}" for name, n in counts.items() if n)
            self.stdout.write(f"  {kind}: {shown}")
        for key in result.abandoned_keys:
            # Reported one by one: each may be a customer who saw an error page.
            self.stderr.write(
                f"Abandoned request {key}: too old to send; it will never be sent. "
                "If the gateway did it anyway, a later run or a webhook records it."
            )
        if result.still_pending:
            raise CommandError(
                f"{result.still_pending} requests are still pending: the gateway could not "
                "answer or is still working on them. Run paycharge_recover again later."
            )
