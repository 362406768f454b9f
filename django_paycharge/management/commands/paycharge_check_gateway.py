"""``manage.py paycharge_check_gateway``: prove each account works against the gateway."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import CommandError, CommandParser
from django.urls import NoReverseMatch, reverse

from ... import conf
from ...services.gateway_check import check_gateway
from ._base import PayChargeCommand


class Command(PayChargeCommand):
    help = (
        "Check each account against the gateway before going live: the credentials (an "
        "authenticated read), the store, and the store's webhook: the URL the shop serves, "
        "active, and its auth token one of WEBHOOK_AUTH_TOKENS. Reads only. One line per "
        "failure; exits 1 when any check fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--public-url",
            required=True,
            help="The shop's public address as the gateway reaches it (https://shop.example); "
            "the webhook's URL is this plus the webhook route of django_paycharge.urls.",
        )
        parser.add_argument(
            "--account", action="append", help="Check only this account (repeatable)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        base = _public_url(options["public_url"])
        failed = []
        for name in options["account"] or conf.account_names():
            result = check_gateway(name, webhook_urls(base, name))
            self.stdout.write(f"Account {name}:")
            for line in result.passed:
                self.stdout.write(f"  ok: {line}")
            for line in result.advice:
                self.stdout.write(self.style.WARNING(f"  note: {line}"))
            for line in result.problems:
                self.stderr.write(f"  FAILED: account {name}: {line}")
            if not result.ok:
                failed.append(name)
        if failed:
            raise CommandError(f"The gateway check failed for account(s): {', '.join(failed)}.")
        self.stdout.write(self.style.SUCCESS("The gateway check passed."))


def _public_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise CommandError(
            "--public-url must be the shop's absolute http(s) address, such as "
            "https://shop.example (no query string)."
        )
    return value.rstrip("/")


def webhook_urls(base: str, account: str) -> list[str]:
    """The URLs the gateway may call with ``account``'s deliveries (the first: to register)."""
    try:
        urls = [reverse("paycharge:webhook", kwargs={"account": account})]
        if account == conf.DEFAULT_ACCOUNT:
            urls.insert(0, reverse("paycharge:webhook"))
    except NoReverseMatch as exc:
        raise CommandError(
            "The webhook view is not in the URLconf: add "
            'path("payments/", include("django_paycharge.urls")) to your urls.py.'
        ) from exc
    return [base + url for url in urls]
