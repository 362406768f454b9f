"""``manage.py paycharge_refund_many --batch NAME``: refund every charge of a canceled event."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ... import services
from ...client.vocabulary import REFUND_REASONS
from ...money import format_money
from ...services import bulk_refunds
from ._base import PayChargeCommand
from ._charge_action import who

#: A progress line at least this often (seconds), besides one every ``--progress-every``.
PROGRESS_SECONDS = 10.0


def metadata_pair(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise CommandError(f"--metadata {text!r}: write KEY=VALUE (event=E42).")
    return key, value


def read_ids(path: str) -> list[uuid.UUID]:
    """One charge id a line; blank lines and ``#`` comments are left out."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CommandError(f"--ids-file {path}: {exc.strerror or exc}.") from None
    ids = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            ids.append(uuid.UUID(text))
        except ValueError:
            raise CommandError(f"{path}, line {number}: {text!r} is not a charge id.") from None
    return ids


def money(amounts: dict[str, int]) -> str:
    return ", ".join(format_money(a, c) for c, a in sorted(amounts.items())) or "nothing"


class Command(PayChargeCommand):
    help = (
        "Refund what is left of every charge of a batch (charges chosen by --metadata and/or "
        "--ids-file), at most --rate refunds a second. Each refund is exactly once: running "
        "the same --batch again resumes it and never refunds a charge twice."
    )
    # Replaced in tests: nothing waits on the wall clock there.
    clock = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch",
            required=True,
            help="The batch's name (event-E42): its keys; the same name resumes the batch.",
        )
        parser.add_argument(
            "--metadata",
            action="append",
            default=[],
            type=metadata_pair,
            metavar="KEY=VALUE",
            help="Charges whose metadata has KEY=VALUE (repeat: all of them).",
        )
        parser.add_argument("--ids-file", help="A file of charge ids, one a line.")
        parser.add_argument("--account", help="Only the charges of this account.")
        parser.add_argument("--reason", choices=REFUND_REASONS)
        parser.add_argument("--message", help="A note kept with each refund.")
        parser.add_argument(
            "--rate",
            type=float,
            default=bulk_refunds.DEFAULT_RATE,
            help=f"Refunds a second at most (default {bulk_refunds.DEFAULT_RATE:g}).",
        )
        parser.add_argument(
            "--progress-every", type=int, default=100, help="A progress line every N charges."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="List what would be refunded; send nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["metadata"] and not options["ids_file"]:
            raise CommandError("Choose the charges: --metadata KEY=VALUE and/or --ids-file PATH.")
        if options["rate"] <= 0 or options["progress_every"] <= 0:
            raise CommandError("--rate and --progress-every must be above 0.")
        ids = read_ids(options["ids_file"]) if options["ids_file"] else None
        charges = services.batch_charges(
            metadata=dict(options["metadata"]), charge_ids=ids, account=options["account"]
        )
        rows = list(charges)
        missing = sorted({str(i) for i in ids or ()} - {str(c.gateway_id) for c in rows})
        for gateway_id in missing:
            self.stderr.write(f"No charge {gateway_id} in the mirror: run paycharge_sync.")
        self.verbosity, self.dry_run = int(options["verbosity"]), options["dry_run"]
        self.every, self.last_line = options["progress_every"], self.clock()
        result = services.refund_many(
            rows,
            batch=options["batch"],
            reason=options["reason"],
            message=options["message"],
            rate=options["rate"],
            dry_run=options["dry_run"],
            requested_by=who(),
            progress=self.report,
            clock=self.clock,
            sleep=self.sleep,
        )
        self.summary(options["batch"], result)
        self.exit_status(result, len(missing))

    def report(self, step: bulk_refunds.RefundStep, result: services.RefundManyResult) -> None:
        """One line for a charge worth a look (each one with -v 2), and the progress lines."""
        if self.verbosity < 1:
            return
        line = self.step_line(step)
        if line and (step.outcome in (bulk_refunds.FAILED, bulk_refunds.UNKNOWN)):
            self.stderr.write(line)
        elif line and (self.verbosity > 1 or step.outcome != bulk_refunds.REFUNDED):
            self.stdout.write(line)
        done = result.total - result.left
        now = self.clock()
        if result.left and (done % self.every == 0 or now - self.last_line >= PROGRESS_SECONDS):
            self.last_line = now
            self.stdout.write(f"Progress: {done}/{result.total} charges: {self.counts(result)}.")

    def step_line(self, step: bulk_refunds.RefundStep) -> str:
        gateway_id, amount = step.charge.gateway_id, format_money(step.amount, step.currency)
        return {
            bulk_refunds.REFUNDED: f"Refunded {amount} of charge {gateway_id}.",
            bulk_refunds.WOULD_REFUND: f"Would refund {amount} of charge {gateway_id}.",
            bulk_refunds.DONE_BEFORE: f"Charge {gateway_id}: refunded by an earlier run.",
            bulk_refunds.SKIPPED: f"Skipped charge {gateway_id}: {step.detail}",
            bulk_refunds.FAILED: f"FAILED: charge {gateway_id}: {step.detail}",
            bulk_refunds.UNKNOWN: f"UNKNOWN: charge {gateway_id}: {step.detail}",
        }.get(step.outcome, "")

    def counts(self, result: services.RefundManyResult) -> str:
        c = result.counts
        if self.dry_run:
            made, money_is = f"{c[bulk_refunds.WOULD_REFUND]} to refund", "to refund"
        else:
            made, money_is = f"{c[bulk_refunds.REFUNDED]} refunded", "refunded by the batch"
        return (
            f"{made}, {c[bulk_refunds.DONE_BEFORE]} done earlier, "
            f"{c[bulk_refunds.SKIPPED]} skipped, {c[bulk_refunds.FAILED]} failed, "
            f"{c[bulk_refunds.UNKNOWN]} unknown, {result.left} left; "
            f"{money_is}: {money(dict(result.amounts))}"
        )

    def summary(self, batch: str, result: services.RefundManyResult) -> None:
        if self.verbosity < 1:
            return
        title = f"Dry run of batch {batch}" if self.dry_run else f"Batch {batch}"
        self.stdout.write(f"{title}: {result.total} charges: {self.counts(result)}.")

    def exit_status(self, result: services.RefundManyResult, missing: int) -> None:
        failed = result.counts[bulk_refunds.FAILED] + missing
        unknown = result.counts[bulk_refunds.UNKNOWN]
        if not failed and not unknown:
            return
        raise CommandError(
            f"{failed} charges failed and {unknown} have an unknown outcome (see above). "
            "Do not refund them another way: paycharge_recover settles the unknown ones, and "
            "running this batch again sends again only what was not sent; it never refunds "
            "a charge twice."
        )
