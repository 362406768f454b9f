"""A :class:`~django_paycharge.client.PayChargeClient`'s options: one type, checked in one place.

:class:`ClientOptions` is what the client is built from. ``conf``'s
:class:`~django_paycharge.conf.Account` is a ``ClientOptions`` (plus the
account's name and ids), read from the account's keys with the same rules
(:func:`option_problems`): a setting the system checks accept is one the
client accepts, and every option can be set per account.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

from django_paycharge.exceptions import FieldError, InvalidParametersError

from .validation import validate_http_url

#: Connect and read time-outs, in seconds.
DEFAULT_TIMEOUT = (5.0, 30.0)


def _non_negative(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def timeout_pair(value: Any) -> tuple[float, float] | None:
    """``(connect, read)`` seconds from one positive number or a pair of them; None if neither."""

    def positive(v: Any) -> bool:
        return _non_negative(v) and v > 0

    if positive(value):
        return (float(value), float(value))
    if isinstance(value, tuple | list) and len(value) == 2 and all(positive(v) for v in value):
        return (float(value[0]), float(value[1]))
    return None


def _base_url(value: Any) -> bool:
    # Paths are appended to it: a query string of its own would end up in the middle.
    try:
        return not urlsplit(validate_http_url(value, "base_url")).query
    except InvalidParametersError:
        return False


def _credential(value: Any) -> bool:
    # Checked here because requests would put a bad header value, the
    # credentials included, into its own exception message.
    return (
        isinstance(value, str)
        and value.isascii()
        and value.isprintable()
        and bool(value)
        and " " not in value
    )


def _header_text(value: Any) -> bool:
    # None: the client's own; a header value must be one line of visible ASCII.
    return value is None or (
        isinstance(value, str) and value.isascii() and value.isprintable() and bool(value.strip())
    )


#: Each option's rule and the reason given when a value breaks it.
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "base_url": (_base_url, "must be an absolute http or https URL"),
    "secret": (_credential, "must be a non-empty string without spaces"),
    "jwt": (_credential, "must be a non-empty string without spaces"),
    "timeout": (lambda v: timeout_pair(v) is not None, "must be seconds or a (connect, read) pair"),
    "max_retries": (lambda v: _whole(v, 0), "must be an integer >= 0"),
    "backoff_base": (_non_negative, "must be a number >= 0"),
    "backoff_max": (_non_negative, "must be a number >= 0"),
    "max_retry_after": (_non_negative, "must be a number >= 0"),
    "polling_timeout": (_non_negative, "must be a number >= 0"),
    "pool_size": (lambda v: _whole(v, 1), "must be an integer >= 1"),
    "user_agent": (_header_text, "must be one line of printable ASCII text, or None"),
}


def option_problems(values: Mapping[str, Any]) -> list[FieldError]:
    """What is wrong with the options given in ``values``, in field order."""
    return [
        FieldError(name, reason)
        for name, (rule, reason) in _RULES.items()
        if name in values and not rule(values[name])
    ]


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """A client's checked options; ``repr`` never shows the credentials.

    Build it with :meth:`checked`, which raises one
    :class:`~django_paycharge.exceptions.InvalidParametersError` naming every
    broken option, and give it to
    :meth:`PayChargeClient.from_options <django_paycharge.client.PayChargeClient.from_options>`.
    See :class:`~django_paycharge.client.PayChargeClient` for what each option
    means.
    """

    base_url: str
    secret: str = field(repr=False)
    jwt: str = field(repr=False)
    timeout: tuple[float, float] = DEFAULT_TIMEOUT
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0
    polling_timeout: float = 60.0
    pool_size: int = 20
    user_agent: str | None = None

    @classmethod
    def checked(cls, **values: Any) -> ClientOptions:
        """Check ``values`` (option names as keys; defaults for those left out) and normalise them.

        The time-out becomes a ``(connect, read)`` pair, numbers become floats
        and the base URL loses its trailing ``/``.
        """
        names = [f.name for f in fields(cls)]
        unknown = set(values) - set(names)
        if unknown:
            raise TypeError(f"unknown client options: {', '.join(sorted(unknown))}")
        given = {f.name: values.get(f.name, f.default) for f in fields(cls)}
        problems = option_problems(given)
        if problems:
            raise InvalidParametersError("The client is configured wrongly.", errors=problems)
        timeout = timeout_pair(given["timeout"])
        assert timeout is not None
        return cls(
            base_url=given["base_url"].rstrip("/"),
            secret=given["secret"],
            jwt=given["jwt"],
            timeout=timeout,
            max_retries=given["max_retries"],
            backoff_base=float(given["backoff_base"]),
            backoff_max=float(given["backoff_max"]),
            max_retry_after=float(given["max_retry_after"]),
            polling_timeout=float(given["polling_timeout"]),
            pool_size=given["pool_size"],
            user_agent=given["user_agent"],
        )

    def values(self) -> dict[str, Any]:
        """The options by name, as :meth:`checked` takes them (a subclass's own fields left out)."""
        return {name: getattr(self, name) for name in OPTION_NAMES}


#: The options' names, in field order.
OPTION_NAMES = tuple(f.name for f in fields(ClientOptions))
