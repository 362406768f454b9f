"""``{% load paycharge %}{% paycharge_issuer_token issuer_token %}``.

Renders what the issuer token's call method needs:

- ``http_post``: a form POSTing the payload as hidden fields to the provider,
  submitted by a script (with the page's CSP nonce) and a ``<noscript>`` button;
  a card's 3-D Secure token is one of these (its ``content_type`` must be a
  form encoding);
- ``http_get``: a navigation to the provider's URL, with a link as fallback;
- ``sdk``, ``web``, ``app``: no form; the token, payload and call method as JSON
  in ``<script type="application/json" id="paycharge-issuer-token">`` for the
  shop's own integration, a notice the shop's script replaces, and (under
  ``DEBUG``) a note saying what that integration must do;
- ``bank_transfer``: the bank account to transfer to.

Every value is escaped. The provider URL must be absolute ``https`` (plain
``http`` only with ``PAYCHARGE["ALLOW_HTTP_ISSUER_URLS"]``, for the fake
gateway); anything else renders a notice instead of a form.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django import template
from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import conf
from ..charge_errors import failure_message
from ..models import Charge, IssuerToken
from ..money import format_money
from ..services.charges import PaymentInstructions

register = template.Library()
logger = logging.getLogger("django_paycharge.templatetags")

_TEMPLATES = {
    "http_post": "django_paycharge/issuer_token/http_post.html",
    "http_get": "django_paycharge/issuer_token/http_get.html",
}
_SDK_TEMPLATE = "django_paycharge/issuer_token/sdk.html"
_BANK_TEMPLATE = "django_paycharge/issuer_token/bank_transfer.html"
_REFUSED_TEMPLATE = "django_paycharge/issuer_token/refused.html"
_INSTRUCTIONS_TEMPLATE = "django_paycharge/payment_instructions.html"
#: Encodings an HTML form can send (a 3-D Secure token names its ``content_type``).
FORM_ENCODINGS = ("application/x-www-form-urlencoded", "multipart/form-data")
#: What the shop's own code must do with a token the tag cannot complete in a browser.
INTEGRATION_NOTES = {
    "sdk": _(
        "call_method “sdk”: load the payment provider's JavaScript SDK on this page and hand "
        "it issuer_token and payload from the JSON in #paycharge-issuer-token."
    ),
    "web": _(
        "call_method “web”: open issuer_token inside the provider's own browser environment "
        "(its in-app browser, with its API); an ordinary browser cannot continue."
    ),
    "app": _(
        "call_method “app”: pass issuer_token to your native app, which completes the "
        "payment with the provider's app SDK."
    ),
}


def is_allowed_provider_url(url: str) -> bool:
    """An absolute ``https`` URL with a host (``http`` too when the setting allows it)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    schemes = {"https", "http"} if conf.get_setting("ALLOW_HTTP_ISSUER_URLS") else {"https"}
    return parts.scheme.lower() in schemes and bool(parts.hostname) and url == url.strip()


def _refusal_reason(url: str) -> str:
    # Says what to change, without logging the URL (it carries the provider's session).
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme == "http":
        return (
            "the provider URL uses plain http, which needs "
            'PAYCHARGE["ALLOW_HTTP_ISSUER_URLS"] = True (only for a gateway on this '
            "machine, such as the fake gateway; never in production)"
        )
    return "the provider URL is not an absolute https URL"


def form_fields(payload: Any) -> list[tuple[str, str]]:
    """The payload as form fields: strings as they are, anything nested as JSON."""
    if not isinstance(payload, dict):
        return []
    fields = []
    for key, value in payload.items():
        if isinstance(value, str):
            text = value
        elif value is None:
            text = ""
        elif isinstance(value, bool | int | float):
            text = json.dumps(value)
        else:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        fields.append((str(key), text))
    return fields


def url_with_fields(url: str, fields: list[tuple[str, str]]) -> str:
    """``url`` with ``fields`` added to its query, keeping the query it already had."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) + fields
    return urlunsplit(parts._replace(query=urlencode(query)))


def form_encoding(issuer_token: IssuerToken) -> str | None:
    """The form's ``enctype``: the token's ``content_type`` (3-D Secure names one) when a
    browser form can send it, form-encoded when it names none, None when it cannot."""
    raw = issuer_token.raw if isinstance(issuer_token.raw, dict) else {}
    named = raw.get("content_type")
    if not named:
        return FORM_ENCODINGS[0]
    media = str(named).split(";")[0].strip().lower()
    return media if media in FORM_ENCODINGS else None


@register.simple_tag(takes_context=True)
def paycharge_issuer_token(
    context: template.Context, issuer_token: IssuerToken, nonce: str | None = None
) -> SafeString:
    """Render an issuer token for the customer (see the module docstring)."""
    request = context.get("request")
    csp_nonce = nonce or context.get("csp_nonce") or getattr(request, "csp_nonce", None)
    ctx: dict[str, Any] = {"token": issuer_token, "nonce": csp_nonce or ""}
    if issuer_token.payment_type == "bank_transfer":
        return render_to_string(_BANK_TEMPLATE, ctx)
    if issuer_token.call_method not in _TEMPLATES:
        return _for_integration(issuer_token, ctx)
    return _for_browser(issuer_token, ctx)


def _for_integration(issuer_token: IssuerToken, ctx: dict[str, Any]) -> SafeString:
    """``sdk``, ``web``, ``app`` (or an unknown method): the token as JSON for the shop's code."""
    method = issuer_token.call_method
    ctx["data"] = {
        "issuer_token": issuer_token.issuer_token,
        "payload": issuer_token.payload,
        "call_method": method,
    }
    ctx["call_method"] = method
    if settings.DEBUG:
        ctx["developer_note"] = INTEGRATION_NOTES.get(method or "")
    logger.info(
        "Issuer token of charge %s has call_method %r: the shop's own integration must "
        "complete it (docs: template-tag.md)",
        issuer_token.charge_id,
        method,
    )
    return render_to_string(_SDK_TEMPLATE, ctx)


def _for_browser(issuer_token: IssuerToken, ctx: dict[str, Any]) -> SafeString:
    """``http_post`` and ``http_get``: a form or a navigation to the provider's URL."""
    url = issuer_token.issuer_token
    if not is_allowed_provider_url(url):
        logger.warning(
            "Refused to render issuer token of charge %s: %s",
            issuer_token.charge_id,
            _refusal_reason(url),
        )
        return render_to_string(_REFUSED_TEMPLATE, ctx)
    enctype = form_encoding(issuer_token)
    if enctype is None:
        logger.warning(
            "Refused to render issuer token of charge %s: its content_type is not a form encoding",
            issuer_token.charge_id,
        )
        return render_to_string(_REFUSED_TEMPLATE, ctx)
    fields = form_fields(issuer_token.payload)
    ctx.update(
        url=url,
        fields=fields,
        enctype=enctype,
        form_id=f"paycharge-issuer-{issuer_token.charge_id}",
    )
    if issuer_token.call_method == "http_get":
        ctx["url"] = url_with_fields(url, fields)
    return render_to_string(_TEMPLATES[issuer_token.call_method], ctx)


@register.simple_tag
def paycharge_payment_instructions(instructions: PaymentInstructions) -> SafeString:
    """What the customer must do to pay a convenience-store or bank-transfer charge.

    ``{% paycharge_payment_instructions instructions %}``, with what
    :func:`django_paycharge.services.payment_instructions` returned: the amount,
    the deadline, the store and where the payment number comes from, or the
    bank account (as ``paycharge_issuer_token`` renders it).
    """
    return render_to_string(_INSTRUCTIONS_TEMPLATE, {"instructions": instructions})


@register.filter
def paycharge_failure(charge: Charge) -> str:
    """What a customer reads about a charge that took no money ("" for any other).

    ``{{ charge|paycharge_failure }}``: the gateway's reason through the app's
    error-code table, in the customer's language
    (:func:`django_paycharge.charge_errors.failure_message`).
    """
    return failure_message(charge.status, charge.error)


@register.simple_tag
def paycharge_shop_url() -> str:
    """``PAYCHARGE["SHOP_URL"]``: the way back to the shop from the app's customer pages."""
    return str(conf.get_setting("SHOP_URL"))


@register.filter
def paycharge_amount(amount: int | None, currency: str | None) -> str:
    """An amount in minor units, in the reader's locale: ``1000, "JPY"`` -> ``￥1,000`` (ja).

    ``{{ charge.requested_amount|paycharge_amount:charge.requested_currency }}``
    (see :func:`django_paycharge.money.format_money`).

    An amount the gateway did not send (or sent in a form that could not be
    read) is "unknown" to a customer.
    """
    if amount is None:
        return gettext("unknown")
    return format_money(amount, currency)


@register.simple_tag
def paycharge_widget_jwt(account: str | None = None) -> str:
    """The JWT for the payment widget in a page: ``PAYCHARGE["WIDGET_JWT"]``, a browser app
    token's. Never the server's ``JWT`` (``conf.widget_jwt`` refuses it).

    ``<form data-jwt="{% paycharge_widget_jwt %}">`` (escaped like any value).
    """
    return conf.widget_jwt(account)
