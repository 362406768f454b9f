"""What the charge admin shows in its columns and fields: each a plain function of a charge.

``ChargeAdmin`` (:mod:`.charges`) names them; :mod:`.charge_page` lays them out.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from django.contrib import admin
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import conf, services
from ..models import (
    REFUNDED_ANNOTATION,
    Charge,
    IssuerToken,
    RefundState,
    TransactionTokenType,
    refund_state,
)
from ..money import format_money
from . import display

logger = logging.getLogger("django_paycharge.admin")

# -- columns of the list (and fields of the page) -------------------------------------------


@admin.display(description=gettext_lazy("charge id"))
def short_id(charge: Charge) -> SafeString | str:
    # The full id is in the title and on the detail page; the search takes these 8 too.
    return display.short_id(charge.gateway_id, charge=True)


@admin.display(description=gettext_lazy("status"), ordering="status")
def status_badge(charge: Charge) -> SafeString:
    badge = display.status_badge(charge.status, charge.get_status_display())
    state = refund_state(charge.charged_amount, getattr(charge, REFUNDED_ANNOTATION, None))
    if not state:
        return badge
    return format_html("{}{}", badge, display.refund_badge(state, RefundState(state).label))


@admin.display(description=gettext_lazy("amount"))
def amount(charge: Charge) -> str:
    return display.format_money(charge.requested_amount, charge.requested_currency)


@admin.display(description=gettext_lazy("mode"), ordering="mode")
def mode_marker(charge: Charge) -> SafeString | str:
    return display.test_marker() if charge.is_test else (charge.get_mode_display() or "-")


@admin.display(description=gettext_lazy("store"))
def store(charge: Charge) -> SafeString | str:
    # Only list pages carry the store's name (single reads do not): else its short id.
    return charge.store_name or display.short_id(charge.store_id)


@admin.display(description=gettext_lazy("issuer token"))
def issuer_token_column(charge: Charge) -> str:
    # Joined by list_select_related: no query per row.
    try:
        token = charge.issuer_token
    except IssuerToken.DoesNotExist:
        return "-"
    return token.call_method or token.payment_type or str(display.UNKNOWN)


# -- fields of the page ------------------------------------------------------------------------


@admin.display(description=gettext_lazy("charged"))
def charged(charge: Charge) -> str:
    return display.format_money(charge.charged_amount, charge.charged_currency)


@admin.display(description=gettext_lazy("fee"))
def fee(charge: Charge) -> str:
    return display.format_money(charge.fee_amount, charge.fee_currency)


# The gateway's *_formatted amounts, shown like the amounts above (not "2400.0000").
@admin.display(description=gettext_lazy("requested amount (formatted)"))
def requested_formatted(charge: Charge) -> str:
    return display.format_major_amount(charge.requested_amount_formatted, charge.requested_currency)


@admin.display(description=gettext_lazy("charged amount (formatted)"))
def charged_formatted(charge: Charge) -> str:
    return display.format_major_amount(charge.charged_amount_formatted, charge.charged_currency)


@admin.display(description=gettext_lazy("fee amount (formatted)"))
def fee_formatted(charge: Charge) -> str:
    return display.format_major_amount(charge.fee_amount_formatted, charge.fee_currency)


@admin.display(description=gettext_lazy("refunded"))
def refunded_total(charge: Charge) -> str:
    return format_money(charge.refunded_amount, charge.charged_currency)


@admin.display(description=gettext_lazy("left to refund"))
def refundable_total(charge: Charge) -> str:
    return format_money(services.refundable_amount(charge), charge.charged_currency)


@admin.display(description=gettext_lazy("transaction token type"))
def token_type(charge: Charge) -> str:
    code = charge.transaction_token_type
    return str(dict(TransactionTokenType.choices).get(code or "", code or "-"))


@admin.display(description=gettext_lazy("error"))
def error_pretty(charge: Charge) -> SafeString:
    return display.describe_error(charge.error)


@admin.display(description=gettext_lazy("metadata"))
def metadata_pretty(charge: Charge) -> SafeString:
    return display.pretty_json(charge.metadata)


@admin.display(description=gettext_lazy("3-D Secure"))
def three_ds_pretty(charge: Charge) -> SafeString:
    return display.pretty_json(charge.three_ds)


@admin.display(description=gettext_lazy("redirect"))
def redirect_pretty(charge: Charge) -> SafeString:
    return display.pretty_json(charge.redirect)


@admin.display(description=gettext_lazy("raw payload digest"))
def raw_digest_display(charge: Charge) -> str:
    # The field has no verbose name (adding one needs a migration): label it here.
    return charge.raw_digest or "-"


@admin.display(description=gettext_lazy("raw payload"))
def raw_folded(charge: Charge) -> SafeString:
    return display.folded_json(_("As the gateway last sent it"), charge.raw)


@admin.display(description=gettext_lazy("order"))
def order(charge: Charge) -> SafeString | str:
    """A link to the shop's order (``ORDER_URL_HOOK``), or ``-``."""
    url = order_url(charge)
    if url is None:
        return "-"
    return format_html('<a href="{}" class="paycharge-order-link">{}</a>', url, _("Open the order"))


def order_url(charge: Charge) -> str | None:
    """The hook's URL of the charge's order: a path or an http(s) URL, else ``None``.

    A failing hook is logged and gives no link: the charge page must still open.
    """
    hook = conf.get_setting("ORDER_URL_HOOK")
    if not hook:
        return None
    func = import_string(hook) if isinstance(hook, str) else hook
    try:
        url = func(charge)
    except Exception:
        logger.exception("ORDER_URL_HOOK failed for charge %s", charge.gateway_id)
        return None
    if not url:
        return None
    url = str(url)
    # Never a javascript: (or other) link in a staff member's page.
    return url if urlsplit(url).scheme.lower() in ("", "http", "https") else None
