"""The charge admin: a read-only mirror with gateway actions, fast at any table size."""

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
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import services
from ..exceptions import NotFoundError, PayChargeError
from ..models import (
    REFUNDED_ANNOTATION,
    Charge,
    IssuerToken,
    RefundState,
    refund_state,
    with_refunded_amounts,
)
from . import display, export
from .charge_actions import cancel_charges, capture_charges, refund_charges
from .charge_extras import ChargeExtrasMixin, order_url_hook_is_set
from .charge_lifecycle import ChargeLifecycleMixin
from .filters import (
    AccountFilter,
    AmountRangeFilter,
    CreatedRangeFilter,
    CurrencyFilter,
    RefundStateFilter,
    StoreFilter,
    range_problems,
)
from .gateway import limited, run_sync_now
from .inlines import IssuerTokenInline, WebhookDeliveryInline, can_see_account_numbers
from .issuer_tokens import fetch_issuer_token_action
from .paginator import EstimatedCountPaginator
from .readonly import ReadOnlyAdmin
from .rows import ActionCheckboxMixin
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


class ChargeChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        return super().get_queryset(request, exclude_parameters).only(*LIST_COLUMNS)


class ChargeAdmin(ActionCheckboxMixin, ChargeLifecycleMixin, ChargeExtrasMixin, ReadOnlyAdmin):
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
    list_per_page = 50
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
    inlines = (IssuerTokenInline, WebhookDeliveryInline)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "gateway_id",
                    "status_badge",
                    "mode_marker",
                    "payment_type",
                    "account",
                    "store_id",
                    "store_name",
                    "merchant_name",
                    "merchant_transaction_id",
                    "created_on",
                )
            },
        ),
        (
            gettext_lazy("Amounts"),
            {
                # Each amount from its minor units, beside the gateway's own formatted
                # figure: the same money, one format (money.format_money).
                "fields": (
                    ("amount", "requested_formatted"),
                    ("charged", "charged_formatted"),
                    ("fee", "fee_formatted"),
                    "only_direct_currency",
                )
            },
        ),
        (
            gettext_lazy("Error and metadata"),
            {"fields": ("error_pretty", "metadata_pretty")},
        ),
        (
            gettext_lazy("Token and payment"),
            {
                "fields": (
                    "transaction_token_id",
                    "token_type",
                    "subscription_id",
                    "capture_at",
                    "descriptor",
                    "descriptor_phone_number",
                    "three_ds_pretty",
                    "redirect_pretty",
                )
            },
        ),
        (
            gettext_lazy("Mirror"),
            {
                "fields": (
                    "synced_at",
                    "first_seen_at",
                    "status_rank",
                    "raw_digest_display",
                    "raw_folded",
                )
            },
        ),
    )
    readonly_fields = (
        "status_badge",
        "mode_marker",
        "amount",
        "charged",
        "fee",
        "error_pretty",
        "metadata_pretty",
        "three_ds_pretty",
        "redirect_pretty",
        "raw_folded",
        "status_rank",
        "raw_digest_display",
        "order",
        "requested_formatted",
        "charged_formatted",
        "fee_formatted",
        "token_type",
    )

    def has_call_gateway_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_paycharge.call_gateway")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Charge]:
        # Each charge's refunded total, for the refund badge and filter (one subquery a row).
        return with_refunded_amounts(super().get_queryset(request))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if not order_url_hook_is_set():
            return fieldsets
        # The shop's order, first thing on the page: PAYCHARGE["ORDER_URL_HOOK"].
        (name, options), *rest = fieldsets
        return [(name, {**options, "fields": ("order", *options["fields"])}), *rest]

    def get_inline_instances(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        inlines = super().get_inline_instances(request, obj)
        if obj is None or not IssuerToken.objects.filter(charge=obj).exists():
            inlines = [i for i in inlines if not isinstance(i, IssuerTokenInline)]
        return inlines

    # -- changelist ----------------------------------------------------------------------------

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
                condition |= Q(gateway_id__range=prefix)
            elif hint := short_id_hint(term):
                self.message_user(request, hint, messages.INFO)
        else:
            condition |= Q(gateway_id=value) | Q(transaction_token_id=value)
        return queryset.filter(condition), False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
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

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {
            "can_call_gateway": self.has_call_gateway_permission(request),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)

    # -- columns and fields --------------------------------------------------------------------

    @admin.display(description=gettext_lazy("charge id"))
    def short_id(self, charge: Charge) -> SafeString | str:
        # The full id is in the title and on the detail page; the search takes these 8 too.
        return display.short_id(charge.gateway_id, charge=True)

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, charge: Charge) -> SafeString:
        badge = display.status_badge(charge.status, charge.get_status_display())
        state = refund_state(charge.charged_amount, getattr(charge, REFUNDED_ANNOTATION, None))
        if not state:
            return badge
        return format_html("{}{}", badge, display.refund_badge(state, RefundState(state).label))

    @admin.display(description=gettext_lazy("amount"))
    def amount(self, charge: Charge) -> str:
        return display.format_money(charge.requested_amount, charge.requested_currency)

    @admin.display(description=gettext_lazy("charged"))
    def charged(self, charge: Charge) -> str:
        return display.format_money(charge.charged_amount, charge.charged_currency)

    @admin.display(description=gettext_lazy("fee"))
    def fee(self, charge: Charge) -> str:
        return display.format_money(charge.fee_amount, charge.fee_currency)

    @admin.display(description=gettext_lazy("mode"), ordering="mode")
    def mode_marker(self, charge: Charge) -> SafeString | str:
        return display.test_marker() if charge.is_test else (charge.get_mode_display() or "-")

    @admin.display(description=gettext_lazy("store"))
    def store(self, charge: Charge) -> SafeString | str:
        # Only list pages carry the store's name (single reads do not): else its short id.
        return charge.store_name or display.short_id(charge.store_id)

    @admin.display(description=gettext_lazy("issuer token"))
    def issuer_token_column(self, charge: Charge) -> str:
        # Joined by list_select_related: no query per row.
        try:
            token = charge.issuer_token
        except IssuerToken.DoesNotExist:
            return "-"
        return token.call_method or token.payment_type or str(display.UNKNOWN)

    @admin.display(description=gettext_lazy("error"))
    def error_pretty(self, charge: Charge) -> SafeString:
        return display.describe_error(charge.error)

    @admin.display(description=gettext_lazy("metadata"))
    def metadata_pretty(self, charge: Charge) -> SafeString:
        return display.pretty_json(charge.metadata)

    @admin.display(description=gettext_lazy("3-D Secure"))
    def three_ds_pretty(self, charge: Charge) -> SafeString:
        return display.pretty_json(charge.three_ds)

    @admin.display(description=gettext_lazy("redirect"))
    def redirect_pretty(self, charge: Charge) -> SafeString:
        return display.pretty_json(charge.redirect)

    @admin.display(description=gettext_lazy("raw payload digest"))
    def raw_digest_display(self, charge: Charge) -> str:
        # The field has no verbose name (adding one needs a migration): label it here.
        return charge.raw_digest or "-"

    @admin.display(description=gettext_lazy("raw payload"))
    def raw_folded(self, charge: Charge) -> SafeString:
        return display.folded_json(_("As the gateway last sent it"), charge.raw)

    # -- actions -------------------------------------------------------------------------------

    @admin.action(description=gettext_lazy("Refresh from gateway"), permissions=["call_gateway"])
    def refresh_from_gateway(self, request: HttpRequest, queryset: QuerySet[Charge]) -> None:
        charges = limited(self, request, queryset)
        for charge in charges:
            self._refresh_one(request, charge)

    def _refresh_one(self, request: HttpRequest, charge: Charge) -> None:
        try:
            fresh = services.refresh_charge(
                charge.gateway_id, charge.store_id, account=charge.account
            )
        except NotFoundError:
            self.message_user(
                request,
                _(
                    "Charge %(id)s: the gateway has no such charge in store %(store)s "
                    "(account %(account)s). It may belong to another store or account. "
                    "The copy here was left as it was."
                )
                % {"id": charge.gateway_id, "store": charge.store_id, "account": charge.account},
                messages.ERROR,
            )
        except PayChargeError as exc:
            self.message_user(
                request,
                _("Charge %(id)s: not refreshed: %(error)s")
                % {"id": charge.gateway_id, "error": exc},
                messages.ERROR,
            )
        else:
            self.message_user(
                request,
                _("Charge %(id)s refreshed: %(status)s.")
                % {"id": charge.gateway_id, "status": fresh.get_status_display() or fresh.status},
                messages.SUCCESS,
            )

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
        self._refresh_one(request, charge)
        return HttpResponseRedirect(
            reverse("admin:django_paycharge_charge_change", args=[charge.pk])
        )

    def issuer_token_results(self, request: HttpRequest, results: list[Any]) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": _("Issuer tokens"),
            "results": results,
            "full_numbers": can_see_account_numbers(request),
        }
        return TemplateResponse(
            request, "admin/django_paycharge/charge/issuer_tokens.html", context
        )
