"""The forms of the capture, cancel and refund confirmation pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy

from ..client.vocabulary import REFUND_REASONS
from ..models import RefundReason

#: The hidden field a charge page's button adds: after the action, back to that charge.
FROM_CHARGE = "_paycharge_from_charge"


class ActionForm(forms.Form):
    #: Made when the page is shown; the same on a second submit of the same page.
    idempotency_key = forms.CharField(widget=forms.HiddenInput, max_length=64)

    #: Whether the page restates what will happen (amounts) before it is done.
    review = False

    def __init__(self, *args: Any, single: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.single = single
        if not single:  # an amount is for one charge; several get everything
            self.fields.pop("amount", None)


class CaptureForm(ActionForm):
    amount = forms.IntegerField(
        label=gettext_lazy("Amount to capture"),
        min_value=1,
        required=False,
        help_text=gettext_lazy("In the currency's smallest unit. Empty: the whole authorization."),
    )


class CancelForm(ActionForm):
    pass


class RefundForm(ActionForm):
    """How much: a given amount, or all that is left, chosen explicitly (never by an empty box).

    Its page is shown twice: the choice, then the amounts restated charge by
    charge before anything is sent (``confirmed``).
    """

    review = True
    PART, ALL = "part", "all"

    scope = forms.ChoiceField(
        label=gettext_lazy("What to refund"),
        widget=forms.RadioSelect,
        choices=[
            (PART, gettext_lazy("This amount")),
            (ALL, gettext_lazy("All that is left to refund")),
        ],
    )
    amount = forms.IntegerField(
        label=gettext_lazy("Amount to refund"),
        min_value=1,
        required=False,
        help_text=gettext_lazy("In the currency's smallest unit (yen for JPY, cents for USD)."),
    )
    reason = forms.ChoiceField(
        label=gettext_lazy("Reason"),
        required=False,
        choices=[("", "—")] + [(r, RefundReason(r).label) for r in REFUND_REASONS],
    )
    message = forms.CharField(
        label=gettext_lazy("Note"), required=False, max_length=1000, widget=forms.Textarea
    )
    #: Set by the page that restated the amounts: submitting it refunds them.
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, single: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, single=single, **kwargs)
        if not single:
            scope: Any = self.fields["scope"]
            scope.choices = [(self.ALL, gettext_lazy("All that is left to refund, on each charge"))]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        wants_part = data.get("scope") == self.PART and "amount" in self.fields
        if wants_part and not data.get("amount") and "amount" not in self.errors:
            self.add_error("amount", gettext_lazy("Enter the amount to refund."))
        if data.get("scope") == self.ALL:
            data["amount"] = None  # "all" wins over a number left in the box
        return data
