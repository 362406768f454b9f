"""Fields of the charge page for staff: the shop's order (``ORDER_URL_HOOK``) and the
gateway's formatted amounts shown like the others."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from django.contrib import admin
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import conf
from ..models import Charge, TransactionTokenType
from . import display

logger = logging.getLogger("django_paycharge.admin")


def order_url_hook_is_set() -> bool:
    return bool(conf.get_setting("ORDER_URL_HOOK"))


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


def order_link(charge: Charge) -> SafeString | str:
    url = order_url(charge)
    if url is None:
        return "-"
    return format_html('<a href="{}" class="paycharge-order-link">{}</a>', url, _("Open the order"))


class ChargeExtrasMixin:
    """The order link and the ``*_formatted`` amounts, for ``ChargeAdmin``."""

    @admin.display(description=gettext_lazy("order"))
    def order(self, charge: Charge) -> SafeString | str:
        return order_link(charge)

    @admin.display(description=gettext_lazy("transaction token type"))
    def token_type(self, charge: Charge) -> str:
        code = charge.transaction_token_type
        return str(dict(TransactionTokenType.choices).get(code or "", code or "-"))

    # The gateway's *_formatted amounts, shown like the amounts above (not "2400.0000").
    @admin.display(description=gettext_lazy("requested amount (formatted)"))
    def requested_formatted(self, charge: Charge) -> str:
        return display.format_major_amount(
            charge.requested_amount_formatted, charge.requested_currency
        )

    @admin.display(description=gettext_lazy("charged amount (formatted)"))
    def charged_formatted(self, charge: Charge) -> str:
        return display.format_major_amount(charge.charged_amount_formatted, charge.charged_currency)

    @admin.display(description=gettext_lazy("fee amount (formatted)"))
    def fee_formatted(self, charge: Charge) -> str:
        return display.format_major_amount(charge.fee_amount_formatted, charge.fee_currency)
