"""``manage.py paycharge_sync``: bring the mirror up to date with the gateway."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from ... import conf, services
from ...exceptions import PayChargeError, SyncInProgressError
from ...models import QuarantinedItem
from ...services import SyncResult
from ...services.mirror import Report, mark_reported, report
from ._base import PayChargeCommand, explain

#: Exit status of a run that stored everything it could but quarantined items that are
#: new (never reported before) or that the next run tries again. Items reported before
#: that only staff can settle (no usable id) are said in the output, not in the status.
QUARANTINE_EXIT_STATUS = 3


class Command(PayChargeCommand):
    help = (
        "Sync charges and webhook configurations from the gateway into the local mirror "
        "(both when neither --charges nor --webhooks is given)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        _add_what(parser)
        _add_how(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        self._verbosity = options.get("verbosity", 1)
        if not options["all_accounts"]:
            self._sync_account(options["account"], options)
            return
        if options["store"]:
            raise CommandError(
                "--store names one store: use it with --account, not --all-accounts."
            )
        failed = []
        for account in conf.account_names():
            self._say(f"Account {account}:")
            try:
                self._sync_account(account, options)
            except (CommandError, PayChargeError) as exc:  # the next accounts still sync
                message = explain(exc) if isinstance(exc, PayChargeError) else str(exc)
                self.stderr.write(f"Account {account} failed: {message}")
                failed.append(account)
        if failed:
            raise CommandError(f"Sync failed for accounts: {', '.join(failed)}.")

    def _sync_account(self, account: str | None, options: dict[str, Any]) -> None:
        options = {**options, "account": account}
        both = not options["charges"] and not options["webhooks"]
        since = _parse_since(options["since"])
        self._tty = sys.stdout.isatty() and self._verbosity >= 1
        self._every = 1 if options["progress"] else 50
        kept = Report()
        synced: list[str] = []  # the quarantined resources this run reports on
        if options["charges"] or both:
            kept += self._charges(options, since)
            synced.append(QuarantinedItem.Resource.CHARGE)
        if options["webhooks"] or both:
            result = services.sync_webhooks(options["account"], options["store"])
            self._summary("Webhook configurations", result)
            kept += _report(result.as_dict())
            synced.append(QuarantinedItem.Resource.WEBHOOK)
        if options["refunds"]:
            kept += self._refunds(options, since)
            synced += [QuarantinedItem.Resource.REFUND, QuarantinedItem.Resource.CANCEL]
        if options["subscriptions"]:
            kept += self._subscriptions(options)
            synced.append(QuarantinedItem.Resource.SUBSCRIPTION)
        if options["fill_payment_types"]:
            filled = services.fill_payment_types(
                options["account"], limit=options["fill_payment_types"]
            )
            self._say(f"Payment types filled in for {filled} charges.")
        # Said now, by the exit status below: the next run reports only what is new then.
        mark_reported(options["account"] or conf.DEFAULT_ACCOUNT, *synced)
        self._quarantined(kept)

    def _charges(self, options: dict[str, Any], since: datetime | None) -> Report:
        try:
            result = services.sync_charges(
                options["account"],
                options["store"],
                full=options["full"],
                since=since,
                progress=self._progress,
                windows=options["windows"],
                max_pages=options["max_pages"],
                wait=options["wait"],
                announce=not options["no_announcements"],
            )
        except SyncInProgressError as exc:
            raise CommandError(f"{exc} Pass --wait SECONDS to wait for it.") from exc
        self._summary("Charges", result)
        if not result.complete:
            self._say(
                f"Stopped after {result.pages} pages (--max-pages): the next sync goes on "
                "from there."
            )
        return _report(result.as_dict())

    def _refunds(self, options: dict[str, Any], since: datetime | None) -> Report:
        counts = services.sync_refunds(options["account"], options["store"], since=since)
        self._say(
            f"Refunds and cancels: {counts['charges']} charges read, {counts['refunds']} "
            f"refunds, {counts['cancels']} cancels, {counts['failed']} failed, "
            f"{counts['quarantined']} quarantined."
        )
        return _report(counts)

    def _subscriptions(self, options: dict[str, Any]) -> Report:
        account = options["account"] or conf.DEFAULT_ACCOUNT
        try:
            result = services.sync_subscriptions(account, options["store"], wait=options["wait"])
        except SyncInProgressError as exc:
            raise CommandError(f"{exc} Pass --wait SECONDS to wait for it.") from exc
        self._say(
            f"Subscriptions: {result.seen} read, {result.changed} changed, {result.charges} "
            f"of their charges read, {result.quarantined} quarantined."
        )
        return report(account, QuarantinedItem.Resource.SUBSCRIPTION)

    def _quarantined(self, kept: Report) -> None:
        """Say what is kept in quarantine; new items make the exit status non-zero."""
        earlier = kept.kept - kept.new
        if earlier and not kept.needs_attention:
            self._say(
                f"{earlier} quarantined item(s) reported before wait for staff (Quarantined "
                "items in the admin: store each from the gateway by its id, or dismiss it with "
                "a reason)."
            )
        if kept.needs_attention:
            # Everything else was stored; a non-zero status makes a scheduler show it.
            raise CommandError(
                f"{kept.new} new item(s) from the gateway could not be stored and are "
                f"quarantined, {kept.retriable} of all kept will be tried again on the next run "
                f"({kept.kept} kept in all; see Quarantined items in the admin: store each from "
                "the gateway by its id, or dismiss it with a reason).",
                returncode=QUARANTINE_EXIT_STATUS,
            )

    def _progress(self, result: SyncResult) -> None:
        line = (
            f"windows {result.windows_done}/{result.windows} done, {result.pages} pages, "
            f"{result.seen} charges, {result.rate:,.0f} charges/s "
            f"({result.created} new, {result.updated} updated)"
        )
        if self._tty:
            self.stdout.write("\r" + line, ending="")
            self.stdout.flush()
        elif result.pages % self._every == 0:
            self._say(line)

    def _summary(self, what: str, result: SyncResult) -> None:
        if self._tty:
            self.stdout.write("")
        windows = f" ({result.windows} windows)" if result.windows > 1 else ""
        self._say(
            self.style.SUCCESS(
                f"{what}: {result.seen} read in {result.elapsed:.1f}s{windows} — "
                f"created {result.created}, "
                f"updated {result.updated}, unchanged {result.unchanged}, "
                f"stale {result.stale}, failed {result.failed}"
                + (f", removed {result.removed}" if result.removed else "")
                + (
                    f", quarantined {result.quarantined} ({result.quarantined_new} new)"
                    if result.quarantined
                    else ""
                )
                + "."
            )
        )

    def _say(self, text: str) -> None:
        """A summary or progress line; ``-v 0`` keeps stdout empty (errors go to stderr)."""
        if self._verbosity >= 1:
            self.stdout.write(text)


def _report(counts: dict[str, Any]) -> Report:
    return Report(counts["quarantined"], counts["quarantined_new"], counts["quarantined_retriable"])


def _parse_since(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = parse_datetime(value)
    if parsed is None or parsed.tzinfo is None:
        raise CommandError(
            f"--since {value!r} is not an ISO-8601 time with an offset (e.g. 2026-01-31T00:00Z)."
        )
    return parsed


def _add_what(parser: CommandParser) -> None:
    """What to sync: which resources, accounts, stores and charges."""
    parser.add_argument("--charges", action="store_true", help="Sync charges.")
    parser.add_argument("--webhooks", action="store_true", help="Sync webhook configurations.")
    parser.add_argument(
        "--refunds",
        action="store_true",
        help="Also sync the refunds and cancels of successful, canceled and authorized "
        "charges (two requests per charge; narrow it with --since or --store).",
    )
    parser.add_argument(
        "--subscriptions",
        action="store_true",
        help="Also sync subscriptions, and the newest charges of those that changed (a "
        "renewal whose webhook was lost is mirrored and announced).",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--account", help="Account name from PAYCHARGE['ACCOUNTS'].")
    which.add_argument(
        "--all-accounts",
        action="store_true",
        help="Every configured account, one after the other.",
    )
    parser.add_argument("--store", help="Only this store (UUID).")
    parser.add_argument("--full", action="store_true", help="Re-read every charge.")
    parser.add_argument("--since", help="Only charges created at or after this ISO-8601 time.")


def _add_how(parser: CommandParser) -> None:
    """How: windows side by side, how far, waiting for another sync, progress, payment types."""
    parser.add_argument(
        "--windows",
        type=int,
        metavar="N",
        help=(
            "Creation-time windows read side by side, at most on SQLite "
            "(default: PAYCHARGE['SYNC_WINDOWS'])."
        ),
    )
    parser.add_argument(
        "--max-pages",
        type=int,
        metavar="N",
        help="Stop after about N pages; the next sync goes on from there.",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="When another sync of the account is running, wait up to this long for it "
        "(default: exit at once).",
    )
    parser.add_argument(
        "--no-announcements",
        action="store_true",
        help="Store the charges without announcing them to your receivers (no "
        "charge_updated nor charge_status_changed): a first import of history.",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="Show windows and charges as the sync goes (always shown on a terminal).",
    )
    parser.add_argument(
        "--fill-payment-types",
        type=int,
        default=0,
        metavar="N",
        help="Afterwards, read up to N transaction tokens to fill in payment types.",
    )
