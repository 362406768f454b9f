"""Suspend, resume and cancel subscriptions from the admin: each behind its own permission.

As the charge actions (:mod:`.charge_actions`): a confirmation page first, which restates
which subscription, which amount and what the customer will see; its idempotency key
(the charge actions' :class:`~.charge_action_forms.ActionForm`) makes a second submit of
the same page change nothing more. The services refuse locally what a status does not
allow; that refusal, like any gateway error, comes back as a message, never a 500.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import services
from ..models import Subscription
from ..money import format_money
from .charge_action_forms import ActionForm
from .gateway import limited, run_each

TEMPLATE = "admin/django_paycharge/subscription/confirm_action.html"

AdminAction = Callable[[Any, HttpRequest, QuerySet[Subscription]], HttpResponse | None]


@dataclass(frozen=True)
class Change:
    """One staff change: its service, its permission, and what the page tells staff."""

    name: str
    permission: str
    title: Any  # a lazy translation
    #: What the customer will see once it is done (restated on the confirmation page).
    customer_sees: Any
    run: Callable[..., Subscription]


def _action(change: Change) -> AdminAction:
    @admin.action(description=change.title, permissions=[change.permission])
    def action(
        model_admin: Any, request: HttpRequest, queryset: QuerySet[Subscription]
    ) -> HttpResponse | None:
        subscriptions = limited(model_admin, request, queryset)
        if not subscriptions:
            return None
        if request.POST.get("post") == "yes":
            form = ActionForm(request.POST)
            if form.is_valid():
                _run_each(model_admin, request, subscriptions, change, form)
                return None
        else:
            form = ActionForm(initial={"idempotency_key": uuid.uuid4().hex})
        return _page(model_admin, request, subscriptions, change, form)

    action.__name__ = action.__qualname__ = change.name
    return action


def _page(
    model_admin: Any,
    request: HttpRequest,
    subscriptions: list[Subscription],
    change: Change,
    form: ActionForm,
) -> TemplateResponse:
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": change.title,
        "action": change.name,
        "customer_sees": change.customer_sees,
        "planned": [(s, format_money(s.amount, s.currency)) for s in subscriptions],
        "form": form,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, TEMPLATE, context)


def _run_each(
    model_admin: Any,
    request: HttpRequest,
    subscriptions: list[Subscription],
    change: Change,
    form: ActionForm,
) -> None:
    def one(subscription: Subscription, key: str, who: str) -> str:
        changed = change.run(subscription, idempotency_key=key, requested_by=who)
        return _("Subscription %(id)s is now %(status)s.") % {
            "id": changed.gateway_id,
            "status": changed.get_status_display() or changed.status,
        }

    page_key = form.cleaned_data["idempotency_key"]
    refused = _("Subscription %(id)s: %(error)s")
    run_each(model_admin, request, subscriptions, page_key, one, refused)


suspend_subscriptions = _action(
    Change(
        name="suspend_subscriptions",
        permission="suspend",
        title=gettext_lazy("Suspend subscriptions…"),
        customer_sees=gettext_lazy(
            "The customer is not charged again until the subscription is resumed."
        ),
        run=services.suspend_subscription,
    )
)
resume_subscriptions = _action(
    Change(
        name="resume_subscriptions",
        permission="resume",
        title=gettext_lazy("Resume subscriptions…"),
        customer_sees=gettext_lazy(
            "The customer is charged again from the next payment date; the subscription "
            "is unpaid until then."
        ),
        run=services.resume_subscription,
    )
)
cancel_subscriptions = _action(
    Change(
        name="cancel_subscriptions",
        permission="cancel",
        title=gettext_lazy("Cancel subscriptions…"),
        customer_sees=gettext_lazy(
            "The customer is never charged again for this subscription. It cannot be "
            "resumed: a new subscription needs the customer's card again."
        ),
        run=services.cancel_subscription,
    )
)
