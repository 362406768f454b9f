"""Store transaction tokens read from the gateway (saved cards above all); read them again.

The same guarded upsert as refunds and subscriptions (:func:`.lifecycle_store._upsert`),
keyed by the account and the token's id: a token once inactive (deleted, or replaced by a
renewal) has the higher rank, so a stale read never makes it active again. The same
fitting: a value that does not fit its column is stored as unknown, ``raw`` keeps it. What
changed for a saved card is announced here, in the write's transaction
(:func:`.announced.announce_saved_card`).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import router, transaction
from django.utils import timezone
from django.utils.translation import gettext

from ... import conf
from ...client.types import TransactionToken as RemoteToken
from ...exceptions import NotFoundError, PayChargeError
from ...models import TransactionTokenInfo
from ...models.fit import fit_row, without_nul
from ..clients import get_client
from ..retry import retry_transient
from .announced import announce_saved_card
from .lifecycle_store import _upsert

State = TransactionTokenInfo.State


def _values(remote: RemoteToken, *, gone: bool = False) -> dict[str, Any]:
    card, cvv = remote.card, remote.cvv_authorize
    inactive = gone or remote.active is False
    payment_type = (remote.payment_type or "")[:32]
    values: dict[str, Any] = {
        "store_id": remote.store_id,
        "payment_type": payment_type,
        "state": State.NOT_FOUND if gone else (State.KNOWN if payment_type else State.FAILED),
        "checked_at": timezone.now(),
        "type": remote.type,
        "mode": remote.mode,
        "active": False if inactive else remote.active,
        "status_rank": 1 if inactive else 0,
        "usage_limit": remote.usage_limit,
        "cvv_authorization_enabled": cvv.enabled if cvv is not None else None,
        "cvv_authorization_status": cvv.status if cvv is not None else None,
        "previous_id": remote.previous_id,
        "card_brand": card.brand if card is not None else None,
        "card_last_four": card.last_four if card is not None else None,
        "card_exp_month": card.exp_month if card is not None else None,
        "card_exp_year": card.exp_year if card is not None else None,
        "created_on": remote.created_on,
        "last_used_on": remote.last_used_on,
        "raw": remote.raw,
        "synced_at": timezone.now(),
    }
    return fit_row(TransactionTokenInfo, without_nul(values))


def store_saved_card(
    remote: RemoteToken, *, account: str, gone: bool = False
) -> TransactionTokenInfo:
    """Insert or move forward the mirror of one transaction token; announce what changed.

    ``gone``: the gateway no longer knows the token (it answered 404 for the token a
    delivery named): stored as inactive. A token that names the one it replaces marks that
    one inactive too (replaced, not deleted: the shop hears ``saved_card_replaced`` once).
    Run again through transient database errors, as charges are.
    """
    alias = router.db_for_write(TransactionTokenInfo)
    key = {"account": account, "token_id": remote.id}

    def write() -> TransactionTokenInfo:
        with transaction.atomic(using=alias):
            values = _values(remote, gone=gone)
            row, before = _upsert(TransactionTokenInfo, None, values, key=key)
            if row.previous_id is not None:
                TransactionTokenInfo.objects.filter(
                    account=account, token_id=row.previous_id, status_rank=0
                ).update(active=False, status_rank=1)
            replaced = (
                row.active is False
                and TransactionTokenInfo.objects.filter(
                    account=account, previous_id=row.token_id
                ).exists()
            )
            announce_saved_card(row, before, alias, replaced=replaced)
        result: TransactionTokenInfo = row
        return result

    return retry_transient(write, using=alias)


def saved_card_place(
    token_id: uuid.UUID | str, store_id: uuid.UUID | str | None, account: str | None
) -> tuple[str, uuid.UUID, Any]:
    """``(account, id, store)`` of a token: the arguments, else its row, else settings."""
    token = uuid.UUID(str(token_id))
    query = TransactionTokenInfo.objects.filter(token_id=token)
    local = (query.filter(account=account) if account else query).only("account", "store_id")
    row = local.first()
    name = account or (row.account if row else conf.DEFAULT_ACCOUNT)
    store = store_id or (row.store_id if row else None) or conf.get_account(name).store_id
    if store is None:
        raise PayChargeError(
            gettext("The token's store is unknown: pass store_id, or set PAYCHARGE['STORE_ID'].")
        )
    return name, token, store


def refresh_saved_card(
    token_id: uuid.UUID | str,
    store_id: uuid.UUID | str | None = None,
    *,
    account: str | None = None,
) -> TransactionTokenInfo:
    """Read one transaction token from the gateway and update (or create) its mirror row.

    Raises :class:`~django_paycharge.exceptions.NotFoundError` when the gateway does not
    know it; it is then mirrored as inactive (a saved card the mirror held is announced
    deleted).
    """
    name, token, store = saved_card_place(token_id, store_id, account)
    try:
        remote = get_client(name).tokens.retrieve(store, token)
    except NotFoundError:
        known = TransactionTokenInfo.objects.filter(account=name, token_id=token).first()
        store_saved_card(_gone(token, store, known), account=name, gone=True)
        raise
    return store_saved_card(remote, account=name)


def _gone(token: uuid.UUID, store: Any, known: TransactionTokenInfo | None) -> RemoteToken:
    """A token the gateway no longer knows, as the mirror last held it (or bare)."""
    return RemoteToken(
        id=token,
        store_id=uuid.UUID(str(store)),
        payment_type=known.payment_type or None if known else None,
        type=known.type if known else None,
        mode=known.mode if known else None,
        email=None,
        metadata=None,
        data=None,
        created_on=known.created_on if known else None,
        raw=known.raw if known else {"id": str(token)},
    )
