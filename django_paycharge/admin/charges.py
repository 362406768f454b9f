"""The charge admin: a read-only mirror with gateway actions, fast at any table size.

One class, read top to bottom: the list, the page, the permissions, the
changelist, the actions and the custom views. Its columns and fields are plain
functions of a charge (:mod:`.charge_fields`); its page's sections, inlines and
buttons are plain data and functions (:mod:`.charge_page`).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext_lazy

from ..models import Charge, with_refunded_amounts
from . import charge_fields, charge_page, export
from .charge_actions import cancel_charges, capture_charges, refund_charges
from .filters import (
    AccountFilter,
    AmountRangeFilter,
    CreatedRangeFilter,
    CurrencyFilter,
    RefundStateFilter,
    StoreFilter,
    range_problems,
)
from .gateway import limited, refresh_one, run_sync_now
from .issuer_tokens import fetch_issuer_token_action, results_page
from .paginator import EstimatedCountPaginator
from .problems import show_banner
from .readonly import ReadOnlyAdmin
from .search import id_prefix_range, short_id_hint

#: Columns the changelist reads: nothing else (``raw`` and the JSON fields stay in the table).
LIST_COLUMNS = (
    "id",
    "gateway_id",
    "status",
    "requested_amount",
    "requested_currency",
    "charged_amount",
    "mode",
    "payment_type",
    "created_on",
    "store_id",
    "store_name",
    "merchant_transaction_id",
    "issuer_token__id",
    "issuer_token__payment_type",
    "issuer_token__call_method",
)


#: At most this many charges found by an id prefix are searched by their primary keys.
PREFIX_IDS = 50


def prefix_condition(prefix: tuple[uuid.UUID, uuid.UUID]) -> Q:
    """The charges whose id starts with the prefix: their primary keys, read first from the
    id index in a statement of their own (8 hex characters name one charge in 4 billion).

    As a range on ``gateway_id`` beside a range on ``created_on`` (a date filter), SQLite,
    which has no statistics, read the dates' index and checked the prefix on every charge
    of the range; as a subquery, PostgreSQL could no longer OR it with the merchant
    transaction id's index and read the table. Keys are an index lookup on both. A prefix
    that finds more than :data:`PREFIX_IDS` (ids made by hand, not by the gateway) is
    searched as the range.
    """
    found = Charge.objects.filter(gateway_id__range=prefix).order_by().values_list("pk", flat=True)
    keys = list(found[: PREFIX_IDS + 1])
    return Q(pk__in=keys) if len(keys) <= PREFIX_IDS else Q(gateway_id__range=prefix)


class ChargeChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        return super().get_queryset(request, exclude_parameters).only(*LIST_COLUMNS)


class ChargeAdmin(ReadOnlyAdmin):
    # -- the list --------------------------------------------------------------------------------

    list_display = (
        "short_id",
        "status_badge",
        "amount",
        "mode_marker",
        "payment_type",
        "created_on",
        "store",
        "merchant_transaction_id",
        "issuer_token_column",
    )
    list_display_links = ("short_id",)
    list_filter = (
        "status",
        "mode",
        CurrencyFilter,
        StoreFilter,
        AccountFilter,
        "payment_type",
        RefundStateFilter,
        ("created_on", admin.DateFieldListFilter),
        CreatedRangeFilter,
        AmountRangeFilter,
    )
    list_select_related = ("issuer_token",)
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    # Only for Django to show the search box: get_search_results does the matching.
    search_fields = ("=gateway_id",)
    search_help_text = gettext_lazy(
        "A charge id or its first 8 or more characters (as in the list), or an exact "
        "transaction token id or merchant transaction id."
    )
    ordering = ("-created_on", "-id")
    actions = (
        "refresh_from_gateway",
        fetch_issuer_token_action,
        capture_charges,
        cancel_charges,
        refund_charges,
    )

    # -- the page: read-only, its sections and inlines depending on the charge ---------------

    fieldsets = charge_page.FIELDSETS
    readonly_fields = charge_page.READONLY_FIELDS
    inlines = charge_page.INLINES

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return charge_page.fieldsets(obj)

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[Any]:
        return charge_page.inlines(obj)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {**charge_page.change_context(request), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, context)

    # -- columns and fields: plain functions of a charge ---------------------------------------

    short_id = staticmethod(charge_fields.short_id)
    status_badge = staticmethod(charge_fields.status_badge)
    amount = staticmethod(charge_fields.amount)
    mode_marker = staticmethod(charge_fields.mode_marker)
    store = staticmethod(charge_fields.store)
    issuer_token_column = staticmethod(charge_fields.issuer_token_column)
    order = staticmethod(charge_fields.order)
    charged = staticmethod(charge_fields.charged)
    fee = staticmethod(charge_fields.fee)
    requested_formatted = staticmethod(charge_fields.requested_formatted)
    charged_formatted = staticmethod(charge_fields.charged_formatted)
    fee_formatted = staticmethod(charge_fields.fee_formatted)
    refunded_total = staticmethod(charge_fields.refunded_total)
    refundable_total = staticmethod(charge_fields.refundable_total)
    token_type = staticmethod(charge_fields.token_type)
    error_pretty = staticmethod(charge_fields.error_pretty)
    metadata_pretty = staticmethod(charge_fields.metadata_pretty)
    three_ds_pretty = staticmethod(charge_fields.three_ds_pretty)
    redirect_pretty = staticmethod(charge_fields.redirect_pretty)
    raw_digest_display = staticmethod(charge_fields.raw_digest_display)
    raw_folded = staticmethod(charge_fields.raw_folded)

    # -- permissions of the gateway actions (Django asks has_<name>_permission) ----------------

    def has_call_gateway_permission(self, request: HttpRequest) -> bool:
        return charge_page.may(request, "call_gateway")

    def has_capture_permission(self, request: HttpRequest) -> bool:
        return charge_page.may(request, "capture")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return charge_page.may(request, "cancel")

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return charge_page.may(request, "refund")

    # -- changelist ----------------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Charge]:
        # Each charge's refunded total, for the refund badge and the page: the stored one.
        return with_refunded_amounts(super().get_queryset(request))

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ChargeChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Charge], search_term: str
    ) -> tuple[QuerySet[Charge], bool]:
        # Each match on an indexed column: never a LIKE over the table.
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = Q(merchant_transaction_id=term)
        try:
            value = uuid.UUID(term)
        except ValueError:
            prefix = id_prefix_range(term)
            if prefix is not None:
                condition |= prefix_condition(prefix)
            elif hint := short_id_hint(term):
                self.message_user(request, hint, messages.INFO)
        else:
            condition |= Q(gateway_id=value) | Q(transaction_token_id=value)
        return queryset.filter(condition), False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        show_banner(request)
        context = {
            "can_call_gateway": self.has_call_gateway_permission(request),
            **(extra_context or {}),
        }
        response = super().changelist_view(request, context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if changelist is not None:  # rendered later: messages added now are shown
            for problem in range_problems(changelist.filter_specs):
                self.message_user(request, problem, messages.ERROR)
        return response

    # -- actions -------------------------------------------------------------------------------

    @admin.action(description=gettext_lazy("Refresh from gateway"), permissions=["call_gateway"])
    def refresh_from_gateway(self, request: HttpRequest, queryset: QuerySet[Charge]) -> None:
        charges = limited(self, request, queryset)
        for charge in charges:
            refresh_one(self, request, charge)

    def issuer_token_results(self, request: HttpRequest, results: list[Any]) -> TemplateResponse:
        """The "Fetch issuer token" action's page (a hook: override it to show your own)."""
        return results_page(self, request, results)

    # -- custom views --------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("sync/", wrap(self.sync_view), name="django_paycharge_charge_sync"),
            path("export/", wrap(self.export_view), name="django_paycharge_charge_export"),
            path(
                "<path:object_id>/refresh/",
                wrap(self.refresh_view),
                name="django_paycharge_charge_refresh",
            ),
            *super().get_urls(),
        ]

    def sync_view(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST" or not self.has_call_gateway_permission(request):
            raise PermissionDenied
        run_sync_now(self, request)
        return HttpResponseRedirect(reverse("admin:django_paycharge_charge_changelist"))

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        """The changelist's charges, as filtered and searched, streamed as CSV."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if "p" in request.GET:  # every page, not the one the link was on
            query = request.GET.copy()
            query.pop("p")
            return HttpResponseRedirect(f"{request.path}?{query.urlencode()}")
        changelist_url = reverse("admin:django_paycharge_charge_changelist")
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseRedirect(f"{changelist_url}?e=1")
        if range_problems(changelist.filter_specs):
            # Never a file of other charges than asked for: the list says what is wrong.
            return HttpResponseRedirect(f"{changelist_url}?{request.GET.urlencode()}")
        return export.csv_response(changelist.queryset)

    def refresh_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST" or not self.has_call_gateway_permission(request):
            raise PermissionDenied
        if not self.has_view_permission(request):
            raise PermissionDenied
        charge = get_object_or_404(Charge, pk=object_id)
        refresh_one(self, request, charge)
        return HttpResponseRedirect(
            reverse("admin:django_paycharge_charge_change", args=[charge.pk])
        )
