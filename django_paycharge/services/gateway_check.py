"""A deploy-time check of one account against the gateway (``paycharge_check_gateway``).

What ``manage.py check`` cannot see, because it reads only the settings: that
the gateway accepts the credentials (an authenticated read), that the store
exists and the app token reaches it, and that the store's webhook
configuration calls the URL the shop serves, is active, sends
``charge_finished`` and carries one of the account's ``WEBHOOK_AUTH_TOKENS``.
Reads only; nothing is written to the gateway or the mirror. A problem is one
line a person can act on, never with a secret in it: tokens are compared by
their digests, and URLs are shown without their user part or query.
"""

from __future__ import annotations

import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.utils.translation import gettext as _

from .. import conf
from ..client import WebhookConfiguration
from ..client.vocabulary import CANCEL_EVENT, REFUND_EVENT, REQUIRED_TRIGGER
from ..exceptions import APIError, ConfigurationError, NetworkError, PayChargeError
from .clients import get_client
from .webhooks import configured_tokens

#: The events a refund's and a cancel's end come by.
LIFECYCLE_TRIGGERS = (REFUND_EVENT, CANCEL_EVENT)


@dataclass
class GatewayCheck:
    """What the check of one account proved (``passed``) and what failed (``problems``)."""

    account: str
    passed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: What works, but slower than it could (the check still passes).
    advice: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_gateway(account: str | None, webhook_urls: Sequence[str]) -> GatewayCheck:
    """Check ``account`` against the gateway; ``webhook_urls``: the URLs the shop serves the
    account's webhook at (the first is the one to register), as the gateway must call them."""
    name = account or conf.DEFAULT_ACCOUNT
    result = GatewayCheck(name)
    try:
        settings = conf.get_account(name)
        digests = configured_tokens(name).tokens
    except ConfigurationError as exc:
        result.problems.append(exc.message)
        return result
    if not digests:
        result.problems.append(
            _(
                "WEBHOOK_AUTH_TOKENS of account %(name)s is empty: every delivery would be "
                "refused (401). Add the webhook's auth token."
            )
            % {"name": name}
        )
    if settings.store_id is None:
        _read(result, settings, None)
        result.problems.append(
            _("STORE_ID of account %(name)s is not set: its store and webhook cannot be checked.")
            % {"name": name}
        )
        return result
    if _read(result, settings, settings.store_id):
        _webhooks(result, settings, settings.store_id, webhook_urls, digests)
    return result


def _read(result: GatewayCheck, settings: conf.Account, store: uuid.UUID | None) -> bool:
    """One authenticated read (a page of the store's charges): True when it was answered."""
    try:
        get_client(settings.name).charges.list_page(store_id=store, limit=10)
    except PayChargeError as exc:
        result.problems.append(_failure(exc, settings, store, _("the store's charges")))
        return False
    if store is None:
        result.passed.append(_("the credentials are accepted"))
    else:
        result.passed.append(
            _("the credentials are accepted and reach store %(store)s") % {"store": store}
        )
    return True


def _webhooks(
    result: GatewayCheck,
    settings: conf.Account,
    store: uuid.UUID,
    urls: Sequence[str],
    digests: Sequence[str],
) -> None:
    client = get_client(settings.name)
    try:
        configs = list(client.webhooks.list(store, merchant_id=settings.merchant_id))
    except PayChargeError as exc:
        result.problems.append(_failure(exc, settings, store, _("the store's webhooks")))
        return
    calling = [c for c in configs if c.url in set(urls)]
    if not calling:
        result.problems.append(_not_registered(store, urls[0], configs))
        return
    for config in calling:
        problems = _config_problems(config, digests)
        result.problems += problems
        result.advice += _config_advice(config)
        if not problems:
            result.passed.append(
                _(
                    "webhook %(id)s calls %(url)s, is active and carries a token of "
                    "WEBHOOK_AUTH_TOKENS"
                )
                % {"id": config.id, "url": shown(config.url)}
            )


def _not_registered(store: uuid.UUID, url: str, configs: list[WebhookConfiguration]) -> str:
    if not configs:
        return _(
            "No webhook is registered for store %(store)s: register %(url)s with the triggers "
            "charge_updated and charge_finished and a token of WEBHOOK_AUTH_TOKENS."
        ) % {"store": store, "url": url}
    near = [c.url for c in configs if c.url and c.url.rstrip("/") == url.rstrip("/")]
    if near:
        return _(
            "The webhook of store %(store)s calls %(registered)s, not %(url)s: the shop would "
            "answer the gateway with a redirect or a 404, and the gateway deletes a webhook "
            "answered so. Register %(url)s."
        ) % {"store": store, "registered": shown(near[0]), "url": url}
    registered = ", ".join(sorted({shown(c.url) for c in configs})) or "-"
    return _(
        "No webhook of store %(store)s calls %(url)s (the ones registered call "
        "%(registered)s): register it, or pass the shop's public URL."
    ) % {"store": store, "url": url, "registered": registered}


def _config_advice(config: WebhookConfiguration) -> list[str]:
    """Triggers the shop's refunds and cancels end by: without them only a sync ends them."""
    missing = [t for t in LIFECYCLE_TRIGGERS if t not in config.triggers]
    if not missing:
        return []
    return [
        _(
            "Webhook %(id)s (%(url)s) does not send %(triggers)s: a refund or a cancel, "
            "answered pending, then ends only when paycharge_sync reads it. Add them."
        )
        % {"id": config.id, "url": shown(config.url), "triggers": ", ".join(missing)}
    ]


def _config_problems(config: WebhookConfiguration, digests: Sequence[str]) -> list[str]:
    what = {"id": config.id, "url": shown(config.url), "trigger": REQUIRED_TRIGGER}
    problems = []
    if config.active is False:
        problems.append(
            _(
                "Webhook %(id)s (%(url)s) is not active: the gateway sends nothing. Set it "
                "active again in the gateway's console."
            )
            % what
        )
    if REQUIRED_TRIGGER not in config.triggers:
        problems.append(
            _("Webhook %(id)s (%(url)s) does not send %(trigger)s: add that trigger.") % what
        )
    digest = config.auth_token_sha256
    if digest is None:
        problems.append(
            _(
                "The gateway did not show webhook %(id)s's auth token: it cannot be compared "
                "with WEBHOOK_AUTH_TOKENS."
            )
            % what
        )
    elif not any(hmac.compare_digest(digest, d) for d in digests):
        problems.append(
            _(
                "The auth token of webhook %(id)s (%(url)s) is not one of WEBHOOK_AUTH_TOKENS: "
                "every delivery would be refused (401). Put its token in WEBHOOK_AUTH_TOKENS."
            )
            % what
        )
    return problems


def _failure(exc: PayChargeError, settings: conf.Account, store: Any, what: Any) -> str:
    """One line for a failed read, by who can fix it (never a credential)."""
    values = {
        "name": settings.name,
        "store": store,
        "merchant": settings.merchant_id,
        "what": what,
        "gateway": shown(settings.base_url),
        "code": getattr(exc, "code", None) or "-",
        "error": type(exc).__name__ if isinstance(exc, NetworkError) else exc.message,
    }
    status = exc.http_status if isinstance(exc, APIError) else None
    if status == 401:
        message = _(
            "The gateway refused the credentials of account %(name)s (401 %(code)s): check "
            "its SECRET and JWT (the app token's two parts)."
        )
    elif status == 403:
        message = _(
            "The app token of account %(name)s may not read %(what)s (403 %(code)s): a store "
            "token reaches its own store only; check STORE_ID %(store)s."
        )
    elif status == 404 and store is not None and settings.merchant_id is not None:
        message = _(
            "The gateway has no store %(store)s under merchant %(merchant)s (404): check "
            "STORE_ID and MERCHANT_ID of account %(name)s."
        )
    elif status == 404 and store is not None:
        message = _("The gateway has no store %(store)s (404): check STORE_ID of account %(name)s.")
    elif isinstance(exc, NetworkError):
        message = _(
            "The gateway at %(gateway)s could not be reached for account %(name)s: check "
            "BASE_URL and the network (%(error)s)."
        )
    else:
        message = _("Reading %(what)s of account %(name)s failed: %(error)s")
    return message % values


def shown(url: str | None) -> str:
    """A URL as the check prints it: without a user part, query or fragment."""
    if not url:
        return "-"
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]  # the user part may hold a password
    return parts._replace(netloc=host, query="", fragment="").geturl()
