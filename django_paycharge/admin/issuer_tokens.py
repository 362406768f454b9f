"""The "Fetch issuer token" action: one gateway call per charge, then a page of the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import services
from ..exceptions import PayChargeError
from ..models import Charge, IssuerToken, PaymentType
from . import display
from .gateway import limited
from .inlines import can_see_account_numbers


@dataclass
class TokenResult:
    charge: Charge
    token: IssuerToken | None = None
    error: str = ""

    @property
    def link(self) -> str:
        """The provider URL, when it is one a browser may open (http or https)."""
        url = self.token.issuer_token if self.token else ""
        try:
            scheme = urlsplit(url).scheme
        except ValueError:
            return ""
        return url if scheme in ("http", "https") else ""

    @property
    def type_label(self) -> str:
        """The token's payment type as staff read it (the code when the gateway sent a new one)."""
        code = self.token.payment_type if self.token else None
        return str(dict(PaymentType.choices).get(code or "", code or display.UNKNOWN))

    @property
    def payload_html(self) -> SafeString:
        return display.pretty_json(self.token.payload if self.token else None)


@admin.action(description=gettext_lazy("Fetch issuer token"), permissions=["call_gateway"])
def fetch_issuer_token_action(
    model_admin: Any, request: HttpRequest, queryset: QuerySet[Charge]
) -> HttpResponse | None:
    charges = limited(model_admin, request, queryset)
    if not charges:
        return None
    results = []
    for charge in charges:
        try:
            token = services.fetch_issuer_token(charge)
        except PayChargeError as exc:
            results.append(TokenResult(charge, error=str(exc)))
            model_admin.message_user(
                request,
                _("Charge %(id)s: no issuer token: %(error)s")
                % {"id": charge.gateway_id, "error": exc},
                messages.ERROR,
            )
        else:
            result = TokenResult(charge, token=token)
            results.append(result)
            model_admin.message_user(
                request,
                _("Charge %(id)s: issuer token fetched (%(type)s).")
                % {"id": charge.gateway_id, "type": result.type_label},
                messages.SUCCESS,
            )
    response: HttpResponse = model_admin.issuer_token_results(request, results)
    return response


def results_page(
    model_admin: Any, request: HttpRequest, results: list[TokenResult]
) -> TemplateResponse:
    """The page of what the action fetched (account numbers masked unless permitted)."""
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": _("Issuer tokens"),
        "results": results,
        "full_numbers": can_see_account_numbers(request),
    }
    return TemplateResponse(request, "admin/django_paycharge/charge/issuer_tokens.html", context)
