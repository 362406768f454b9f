"""What the ``paycharge_*`` commands share: one-line errors instead of tracebacks."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ...exceptions import (
    AuthenticationError,
    ConfigurationError,
    NetworkError,
    PayChargeError,
    PermissionDeniedError,
)


def explain(exc: PayChargeError) -> str:
    """A one-line reason a person can act on (never a credential)."""
    if isinstance(exc, AuthenticationError):
        return (
            "The gateway rejected the credentials: check SECRET and JWT of the account "
            "in PAYCHARGE."
        )
    if isinstance(exc, PermissionDeniedError):
        return "The app token may not do this (a store token reaches one store only)."
    if isinstance(exc, NetworkError):
        return f"The gateway could not be reached: {exc.message} Check BASE_URL and the network."
    if isinstance(exc, ConfigurationError):
        return exc.message
    return str(exc)


class PayChargeCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except PayChargeError as exc:
            raise CommandError(explain(exc)) from exc
