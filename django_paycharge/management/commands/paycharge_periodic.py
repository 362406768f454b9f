"""``manage.py paycharge_periodic``: the periodic work, for cron (docs/deployment.md)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...periodic import STEPS, run_periodic
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Run the periodic work: sweep lost webhook deliveries, recover charge requests, "
        "sync every account, fill payment types, prune old deliveries. Run it every few "
        "minutes from cron (one host is enough; several are safe)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--only",
            action="append",
            choices=STEPS,
            metavar="STEP",
            help=f"Run only this step (repeatable): {', '.join(STEPS)}.",
        )
        parser.add_argument(
            "--skip", action="append", choices=STEPS, metavar="STEP", help="Skip this step."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        steps = [s for s in (options["only"] or STEPS) if s not in (options["skip"] or ())]
        report = run_periodic(steps)
        for step, counts in report.done.items():
            self.stdout.write(f"{step}: {json.dumps(counts, sort_keys=True, default=str)}")
        for step, error in report.failed.items():
            self.stderr.write(f"{step} failed: {error}")
        if report.failed:
            raise CommandError(
                f"Periodic steps failed: {', '.join(report.failed)} (the others ran); "
                "see the log of django_paycharge.periodic."
            )
