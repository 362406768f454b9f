"""Capture, cancel and refund from the charge admin: each behind its own permission.

Each action first shows a confirmation page (the amount of a partial capture,
the refund's amount or "all that is left", its reason and note); a refund's
page then restates, charge by charge, the amount it will refund before
anything is sent. The pages carry an idempotency key, so submitting one twice
(a double click, a reload) captures, cancels or refunds once. Results are
reported per charge through messages; an action started from a charge's page
ends back on that page.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import services
from ..models import Charge
from ..money import format_money
from .charge_action_forms import FROM_CHARGE, ActionForm, CancelForm, CaptureForm, RefundForm
from .gateway import limited, run_each

TEMPLATE = "admin/django_paycharge/charge/confirm_action.html"


#: One charge's action: ``(charge, form data, idempotency key, who asked)`` -> the message
#: to show; a :class:`PayChargeError` is shown as that charge's error.
Run = Callable[[Charge, dict[str, Any], str, str], str]
AdminAction = Callable[[Any, HttpRequest, QuerySet[Charge]], HttpResponse | None]


def charge_action(
    *, description: Any, permission: str, title: Any, form_class: type[ActionForm]
) -> Callable[[Run], AdminAction]:
    """Make ``run`` an admin action behind ``permission``, with its confirmation page first."""

    def decorate(run: Run) -> AdminAction:
        name = run.__name__

        @admin.action(description=description, permissions=[permission])
        def action(
            model_admin: Any, request: HttpRequest, queryset: QuerySet[Charge]
        ) -> HttpResponse | None:
            charges = limited(model_admin, request, queryset)
            return _confirm(model_admin, request, charges, name, str(title), form_class, run)

        action.__name__ = action.__qualname__ = name
        return action

    return decorate


@dataclass
class Planned:
    """One charge of a confirmation page: what it has, and what the action will take."""

    charge: Charge
    left: int | None = None  # left to refund (refunds only)
    amount: int | None = None  # the amount restated for this charge (refunds, review step)

    def money(self, amount: int | None) -> str:
        return format_money(amount, self.charge.charged_currency or self.charge.requested_currency)

    @property
    def requested(self) -> str:
        return format_money(self.charge.requested_amount, self.charge.requested_currency)

    @property
    def charged(self) -> str:
        return format_money(self.charge.charged_amount, self.charge.charged_currency)

    @property
    def left_text(self) -> str:
        return self.money(self.left)

    @property
    def amount_text(self) -> str:
        return self.money(self.amount)

    @property
    def left_after(self) -> str:
        return self.money(None if self.left is None else self.left - (self.amount or 0))


def _confirm(
    model_admin: Any,
    request: HttpRequest,
    charges: list[Charge],
    action: str,
    title: str,
    form_class: type[ActionForm],
    run: Run,
) -> HttpResponse | None:
    """Show the confirmation page (and a refund's restated amounts), or run the action."""
    if not charges:
        return None
    single = len(charges) == 1
    refunds = action == "refund_charges"
    planned = [Planned(c, services.refundable_amount(c) if refunds else None) for c in charges]
    review = False
    if request.POST.get("post") == "yes" and "edit" not in request.POST:
        form = form_class(request.POST, single=single)
        if form.is_valid():
            if form.review and not form.cleaned_data.get("confirmed"):
                review = True
                for item in planned:
                    item.amount = form.cleaned_data.get("amount") or item.left
            else:
                _run_each(model_admin, request, planned, form, run)
                return _back_to_charge(request, charges)
    elif request.POST.get("post") == "yes":  # "Change" on the restating page
        form = form_class(request.POST, single=single)
        form.is_valid()
    else:
        form = form_class(initial={"idempotency_key": uuid.uuid4().hex}, single=single)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "action": action,
        "planned": planned,
        "form": form,
        "review": review,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "from_charge": FROM_CHARGE if request.POST.get(FROM_CHARGE) else "",
        "back_url": _back_url(request, charges),
    }
    return TemplateResponse(request, TEMPLATE, context)


def _run_each(
    model_admin: Any, request: HttpRequest, planned: list[Planned], form: ActionForm, run: Run
) -> None:
    def one(charge: Charge, key: str, who: str) -> str:
        data = dict(form.cleaned_data)
        if form.review and data.get("amount") is None:
            # "All that is left" is the amount the page restated, not whatever is left now.
            data["amount"] = _restated(request, charge)
        return run(charge, data, key, who)

    charges = [item.charge for item in planned]
    page_key = form.cleaned_data["idempotency_key"]
    run_each(model_admin, request, charges, page_key, one, _("Charge %(id)s: %(error)s"))


def _restated(request: HttpRequest, charge: Charge) -> int | None:
    try:
        amount = int(request.POST.get(f"restated_{charge.pk}", ""))
    except ValueError:
        return None
    return amount if amount > 0 else None


def _back_url(request: HttpRequest, charges: list[Charge]) -> str:
    if request.POST.get(FROM_CHARGE) and len(charges) == 1:
        return reverse("admin:django_paycharge_charge_change", args=[charges[0].pk])
    return reverse("admin:django_paycharge_charge_changelist")


def _back_to_charge(request: HttpRequest, charges: list[Charge]) -> HttpResponse | None:
    """Back where the action started: the charge's page, or (None) the list."""
    if request.POST.get(FROM_CHARGE) and len(charges) == 1:
        return HttpResponseRedirect(_back_url(request, charges))
    return None


@charge_action(
    description=gettext_lazy("Capture authorized charges…"),
    permission="capture",
    title=gettext_lazy("Capture authorized charges"),
    form_class=CaptureForm,
)
def capture_charges(charge: Charge, data: dict[str, Any], key: str, who: str) -> str:
    captured = services.capture_charge(
        charge, amount=data.get("amount"), idempotency_key=key, requested_by=who
    )
    return _("Charge %(id)s captured: %(amount)s, status %(status)s.") % {
        "id": charge.gateway_id,
        "amount": format_money(captured.charged_amount, captured.charged_currency),
        "status": captured.get_status_display() or captured.status,
    }


@charge_action(
    description=gettext_lazy("Cancel charges…"),
    permission="cancel",
    title=gettext_lazy("Cancel charges"),
    form_class=CancelForm,
)
def cancel_charges(charge: Charge, data: dict[str, Any], key: str, who: str) -> str:
    cancel = services.cancel_charge(charge, idempotency_key=key, requested_by=who)
    # The cancel's own id means nothing to staff (the charge's page lists its cancels).
    return _("Charge %(id)s: the cancel is %(status)s.") % {
        "id": charge.gateway_id,
        "status": cancel.get_status_display() or cancel.status,
    }


@charge_action(
    description=gettext_lazy("Refund charges…"),
    permission="refund",
    title=gettext_lazy("Refund charges"),
    form_class=RefundForm,
)
def refund_charges(charge: Charge, data: dict[str, Any], key: str, who: str) -> str:
    refund = services.refund_charge(
        charge,
        amount=data.get("amount"),
        reason=data.get("reason") or None,
        message=data.get("message") or None,
        idempotency_key=key,
        requested_by=who,
    )
    return _("Charge %(id)s: refund of %(amount)s is %(status)s.") % {
        "id": charge.gateway_id,
        "amount": format_money(refund.amount, refund.currency),
        "status": refund.get_status_display() or refund.status,
    }
