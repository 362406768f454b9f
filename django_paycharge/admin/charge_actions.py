"""Capture, cancel and refund from the charge admin: each behind its own permission.

Each action first shows a confirmation page (the amount of a partial capture
or refund, the refund's reason and note); the page carries an idempotency
key, so submitting it twice (a double click, a reload) captures, cancels or
refunds once. Results are reported per charge through messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import services
from ..client.vocabulary import REFUND_REASONS
from ..exceptions import PayChargeError
from ..models import Charge, RefundReason
from ..money import format_amount
from .gateway import limited

TEMPLATE = "admin/django_paycharge/charge/confirm_action.html"


class _ActionForm(forms.Form):
    #: Made when the page is shown; the same on a second submit of the same page.
    idempotency_key = forms.CharField(widget=forms.HiddenInput, max_length=64)

    def __init__(self, *args: Any, single: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not single:  # an amount is for one charge; several get everything
            self.fields.pop("amount", None)


class CaptureForm(_ActionForm):
    amount = forms.IntegerField(
        label=gettext_lazy("Amount to capture"),
        min_value=1,
        required=False,
        help_text=gettext_lazy("In the currency's smallest unit. Empty: the whole authorization."),
    )


class CancelForm(_ActionForm):
    pass


class RefundForm(_ActionForm):
    amount = forms.IntegerField(
        label=gettext_lazy("Amount to refund"),
        min_value=1,
        required=False,
        help_text=gettext_lazy("In the currency's smallest unit. Empty: all that is left."),
    )
    reason = forms.ChoiceField(
        label=gettext_lazy("Reason"),
        required=False,
        choices=[("", "—")] + [(r, RefundReason(r).label) for r in REFUND_REASONS],
    )
    message = forms.CharField(
        label=gettext_lazy("Note"), required=False, max_length=1000, widget=forms.Textarea
    )


#: One charge's action: ``(charge, form data, idempotency key, who asked)`` -> the message
#: to show; a :class:`PayChargeError` is shown as that charge's error.
Run = Callable[[Charge, dict[str, Any], str, str], str]
AdminAction = Callable[[Any, HttpRequest, QuerySet[Charge]], HttpResponse | None]


def charge_action(
    *, description: Any, permission: str, title: Any, form_class: type[_ActionForm]
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


def _confirm(
    model_admin: Any,
    request: HttpRequest,
    charges: list[Charge],
    action: str,
    title: str,
    form_class: type[_ActionForm],
    run: Run,
) -> HttpResponse | None:
    """Show the confirmation page, or (after it) run the action on each charge."""
    if not charges:
        return None
    single = len(charges) == 1
    if request.POST.get("post") == "yes":
        form = form_class(request.POST, single=single)
        if form.is_valid():
            who = str(request.user.get_username())
            for charge in charges:
                # One key per charge, all from the page's key: a resubmit finds each again.
                key = f"{form.cleaned_data['idempotency_key']}:{charge.pk}"
                try:
                    text = run(charge, form.cleaned_data, key, who)
                except PayChargeError as exc:
                    # An unknown outcome is not a refusal: a warning that says not to act again.
                    level = messages.WARNING if exc.outcome == "unknown" else messages.ERROR
                    model_admin.message_user(
                        request,
                        _("Charge %(id)s: %(error)s") % {"id": charge.gateway_id, "error": exc},
                        level,
                    )
                else:
                    model_admin.message_user(request, text, messages.SUCCESS)
            return None
    else:
        form = form_class(initial={"idempotency_key": uuid.uuid4().hex}, single=single)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "action": action,
        "charges": [(c, _left(c, action)) for c in charges],
        "form": form,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, TEMPLATE, context)


def _left(charge: Charge, action: str) -> str:
    if action != "refund_charges":
        return ""
    return format_amount(services.refundable_amount(charge), charge.charged_currency)


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
        "amount": format_amount(captured.charged_amount, captured.charged_currency),
        "status": captured.status,
    }


@charge_action(
    description=gettext_lazy("Cancel charges…"),
    permission="cancel",
    title=gettext_lazy("Cancel charges"),
    form_class=CancelForm,
)
def cancel_charges(charge: Charge, data: dict[str, Any], key: str, who: str) -> str:
    cancel = services.cancel_charge(charge, idempotency_key=key, requested_by=who)
    return _("Charge %(id)s: cancel %(cancel)s is %(status)s.") % {
        "id": charge.gateway_id,
        "cancel": cancel.gateway_id,
        "status": cancel.status,
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
        "amount": format_amount(refund.amount, refund.currency),
        "status": refund.status,
    }
