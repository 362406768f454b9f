"""Mirror the gateway's webhook configurations, and check delivery tokens against them."""

from __future__ import annotations

import hmac
import logging
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from ... import conf
from ...client import Rejected, parse_webhook
from ...client import WebhookConfiguration as RemoteWebhook
from ...client.types import token_digest
from ...exceptions import ConfigurationError
from ...models import QuarantinedItem, WebhookConfiguration
from ...models.fit import fit_row, without_nul
from ..clients import get_client
from ..mirror import quarantine, report, retry_quarantined
from ..sync import Progress, SyncResult

logger = logging.getLogger("django_paycharge.webhooks")


def sync_webhooks(
    account: str | None = None,
    store_id: uuid.UUID | str | None = None,
    *,
    progress: Progress | None = None,
) -> SyncResult:
    """Mirror the webhook configurations of one store; mark those gone from the gateway."""
    name = account or conf.DEFAULT_ACCOUNT
    settings = conf.get_account(name)
    store = _store(name, store_id or settings.store_id)
    client = get_client(name)
    result = SyncResult()
    seen: list[uuid.UUID] = []
    now = timezone.now()
    retry_quarantined(
        name,
        resource=QuarantinedItem.Resource.WEBHOOK,
        parse=parse_webhook,
        store=lambda remote: _upsert(remote, name, now, store),
    )
    rejected: list[Rejected] = []
    listing = client.webhooks.list(store, merchant_id=settings.merchant_id, rejected=rejected)
    for remote in listing:
        seen.append(remote.id)
        outcome = _upsert(remote, name, now, store)
        result.seen += 1
        setattr(result, outcome, getattr(result, outcome) + 1)
        if progress and result.seen % 100 == 0:
            progress(result)
    quarantine(name, rejected, resource=QuarantinedItem.Resource.WEBHOOK)
    result.count_quarantined(report(name, QuarantinedItem.Resource.WEBHOOK))
    result.pages = 1 + result.seen // 100
    result.removed = _mark_removed(name, store, seen, now)
    if progress:
        progress(result)
    return result


def _store(account: str, store_id: uuid.UUID | str | None) -> uuid.UUID:
    if store_id is None:
        raise ConfigurationError(
            gettext(
                "Webhook configurations are listed per store: pass a store, or set "
                "STORE_ID for the account %(name)s."
            )
            % {"name": repr(account)}
        )
    return uuid.UUID(str(store_id))


def _mark_removed(account: str, store: uuid.UUID, seen: list[uuid.UUID], now: datetime) -> int:
    """Mark the store's configurations the list did not have removed (and inactive)."""
    # A row without a store (an answer that left store_id out) was listed under this
    # store too: it must be marked removed when the list no longer has it.
    return (
        WebhookConfiguration.objects.filter(
            Q(store_id=store) | Q(store_id=None), account=account, removed_at__isnull=True
        )
        .exclude(gateway_id__in=seen)
        .update(removed_at=now, active=False)
    )


def _upsert(remote: RemoteWebhook, account: str, now: datetime, store: uuid.UUID) -> str:
    """Store one configuration: ``"created"``, ``"updated"``, or ``"unchanged"`` (only its
    ``synced_at`` moves when the gateway says what the mirror already holds)."""
    values: dict[str, Any] = {
        "account": account,
        "platform_id": remote.platform_id,
        "merchant_id": remote.merchant_id,
        "store_id": remote.store_id or store,  # the store it was listed under
        "triggers": list(remote.triggers),
        "url": remote.url,
        "active": remote.active,  # None: the gateway did not say; not the same as inactive
        "is_integration": remote.is_integration,
        "created_on": remote.created_on,
        "updated_on": remote.updated_on,
        "raw": remote.raw,
        "synced_at": now,
        "removed_at": None,
    }
    if remote.auth_token_sha256:
        values["auth_token_digest"] = remote.auth_token_sha256
    values = fit_row(WebhookConfiguration, without_nul(values))
    rows = WebhookConfiguration.objects.filter(gateway_id=remote.id)
    with transaction.atomic():
        row = rows.select_for_update().first()
        if row is None:
            WebhookConfiguration.objects.create(gateway_id=remote.id, **values)
            return "created"
        if all(getattr(row, k) == v for k, v in values.items() if k != "synced_at"):
            rows.update(synced_at=now)
            return "unchanged"
        rows.update(**values)
    return "updated"


# account -> digests of its configured tokens (built once per process and settings).
_configured: conf.SettingsCache[str, conf.WebhookTokens] = conf.SettingsCache()


def configured_tokens(account: str) -> conf.WebhookTokens:
    """The digests of the tokens ``PAYCHARGE`` gives ``account`` (see ``conf.webhook_auth_tokens``).

    Cached: the receiver checks them on every delivery. Raises
    :class:`ConfigurationError` when they are malformed.
    """
    configured = _configured.current()
    found = configured.get(account)
    if found is None:
        tokens = conf.webhook_auth_tokens(account)
        digests = tuple(token_digest(t) for t in tokens.tokens)
        found = configured[account] = conf.WebhookTokens(account, digests, tokens.inherited)
    return found


def delivery_token_matches(presented: str, account: str) -> bool:
    """Whether ``presented`` is one of ``account``'s webhook tokens.

    Its configured tokens first (the common case then costs no query), then
    those of its synced webhook configurations. Another account's tokens never
    match (except the deprecated fallback of ``conf.webhook_auth_tokens``).
    """
    if not presented:
        return False
    configured = configured_tokens(account)
    if matches_auth_token(presented, configured.tokens, ()):
        if configured.inherited:
            _warn_inherited(account)
        return True
    synced = (
        WebhookConfiguration.objects.filter(account=account, removed_at__isnull=True)
        .exclude(auth_token_digest="")
        .values_list("auth_token_digest", flat=True)
    )
    return matches_auth_token(presented, list(synced), ())


_warned: set[str] = set()


def _warn_inherited(account: str) -> None:
    if account not in _warned:
        _warned.add(account)
        logger.warning(
            "A webhook delivery to account %r was accepted with the default account's token "
            "(PAYCHARGE['WEBHOOK_AUTH_TOKENS']): deprecated, give the account its own "
            "WEBHOOK_AUTH_TOKENS (check django_paycharge.W004)",
            account,
        )


def matches_auth_token(presented: str, digests: Iterable[str], tokens: Iterable[str]) -> bool:
    """Constant-time check of a presented token against stored digests and configured tokens.

    Every candidate is compared (no early exit), so timing does not tell
    which one matched or how many there are.
    """
    presented_digest = token_digest(presented)
    matched = False
    for digest in digests:
        matched |= hmac.compare_digest(presented_digest, digest)
    for token in tokens:
        matched |= hmac.compare_digest(presented_digest, token_digest(token))
    return matched
