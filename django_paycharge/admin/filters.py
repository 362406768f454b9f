"""List filters, and the charge-id prefix search, that cost no scan of the charges table.

Django's ``AllValuesFieldListFilter`` lists choices with ``SELECT DISTINCT``
over the whole table; these take theirs from settings and small tables, and
each filters on a column that leads an index.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from .. import conf
from ..models import Charge, WebhookConfiguration

#: At most this many stores are offered (a shop has a handful).
MAX_STORES = 20


class _ValueFilter(admin.SimpleListFilter):
    """Exact match on one column; the selected value is kept among the choices."""

    field: str

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        choices = list(self.choices_from(request))
        selected = self.value()
        if selected and selected not in {value for value, _label in choices}:
            choices.append((selected, selected))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(**{self.field: value})


class AccountFilter(_ValueFilter):
    title = _("account")
    parameter_name = "account"
    field = "account"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(name, name) for name in conf.account_names()]


class CurrencyFilter(_ValueFilter):
    title = _("currency")
    parameter_name = "currency"
    field = "requested_currency"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        return [(c, c) for c in conf.get_setting("ADMIN_CURRENCIES")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(requested_currency=value.upper()) if value else queryset


class StoreFilter(_ValueFilter):
    """Stores of the configured accounts and of the webhook configurations."""

    title = _("store")
    parameter_name = "store"
    field = "store_id"

    def choices_from(self, request: HttpRequest) -> Iterable[tuple[str, Any]]:
        stores: dict[str, str] = {}
        for name in conf.account_names():
            _where, raw = conf.raw_account_settings(name)
            store = _as_uuid(raw.get("STORE_ID"))
            if store:
                stores.setdefault(str(store), name)
        configured = WebhookConfiguration.objects.exclude(store_id=None)
        pairs = configured.order_by().values_list("store_id", "account").distinct()[:MAX_STORES]
        for store_id, account in pairs:
            stores.setdefault(str(store_id), account)
        choices: list[tuple[str, Any]] = []
        for key, owner in list(stores.items())[:MAX_STORES]:
            # One indexed read per store (store_id, -created_on): its newest charge's name.
            store_name = (
                Charge.objects.filter(store_id=key)
                .order_by("-created_on")
                .values_list("store_name", flat=True)
                .first()
            )
            choices.append((key, f"{store_name or key[:8]} ({owner})"))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = _as_uuid(self.value())
        return queryset.filter(store_id=value) if value else queryset


def _as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value)) if value else None
    except ValueError:
        return None


#: The shortest id prefix searched: the changelist shows 8 characters.
MIN_ID_PREFIX = 8
_HEX = frozenset("0123456789abcdef")


def id_prefix_range(term: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The ids starting with ``term`` (8+ hex characters, dashes ignored) as a range.

    A range on the unique index of ``gateway_id`` finds them without a scan on
    every database: UUIDs order as their hex digits, in PostgreSQL's ``uuid``
    type as in the ``char(32)`` other databases store.
    """
    # What staff copy from the list ends with the ellipsis.
    digits = term.rstrip("…").replace("-", "").lower()
    if not MIN_ID_PREFIX <= len(digits) < 32 or not set(digits) <= _HEX:
        return None
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))
