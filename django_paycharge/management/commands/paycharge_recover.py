"""``manage.py paycharge_recover``: settle charge requests left in flight; abandon stale ones."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ... import services
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Ask the gateway, with their own idempotency keys, about charge requests left open by "
        "a crash or a lost answer: each ends with exactly one charge, or refused. Requests older "
        "than the maximum age are abandoned (never sent); abandoned ones whose outcome is "
        "unknown are looked for. Capture, cancel and refund requests left pending are resent "
        "with their keys: each ends acted on exactly once, or marked failed."
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
        result = services.recover_charge_requests(
            older_than=timedelta(seconds=options["older_than"]),
            max_age=timedelta(seconds=max_age) if max_age is not None else None,
        )
        self.stdout.write(
            f"Charge requests settled: {result.settled}, failed: {result.failed}, "
            f"still pending: {result.still_pending}, abandoned: {result.abandoned}, "
            f"found after abandonment: {result.found}; left alone: {result.left_alone} "
            f"younger than {options['older_than']:g} s (perhaps still in flight: run again later)."
        )
        for key in result.abandoned_keys:
            # Reported one by one: each may be a customer who saw an error page.
            self.stderr.write(
                f"Abandoned charge request {key}: too old to send; it will never be sent. "
                "If the gateway made its charge anyway, a later run or a webhook records it."
            )
        # Captures, cancels and refunds left in flight the same way.
        actions = services.recover_action_requests(
            older_than=timedelta(seconds=options["older_than"])
        )
        self.stdout.write(
            f"Capture, cancel and refund requests settled: {actions['settled']}, failed: "
            f"{actions['failed']}, still pending: {actions['still_pending']}."
        )
        pending = result.still_pending + actions["still_pending"]
        if pending:
            raise CommandError(
                f"{pending} requests are still pending: the gateway could not answer or is "
                "still working on them. Run paycharge_recover again later."
            )
