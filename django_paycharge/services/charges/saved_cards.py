"""Saved cards: charge one through the checkout's one exactly-once create, delete one.

A saved card is a transaction token of type ``recurring``: the shop charges it later,
without the customer, with ``POST /charges`` like any charge. So :func:`charge_saved_card`
is :func:`.create.create_charge` (its request row, key, recovery and signals), after the
refusals the SDKs' rules make from what the mirror knows of the token
(:func:`~django_paycharge.client.token_vocabulary.charge_refusal`); what the mirror does
not know (no token event or read yet), the gateway decides.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.utils.translation import gettext, gettext_noop

from ... import conf
from ...client.params import ChargeCreateParams
from ...client.token_vocabulary import (
    CVV_AUTHORIZATION_NOT_COMPLETED,
    NON_SUBSCRIPTION_PAYMENT,
    RECURRING_TOKEN_DISABLED,
    charge_refusal,
)
from ...exceptions import NotFoundError, SavedCardError
from ...models import Charge, ChargeRequest, TransactionTokenInfo
from ..clients import get_client
from ..mirror import refresh_saved_card, saved_card_place
from .create import create_charge


def charge_saved_card(
    params: ChargeCreateParams | None = None,
    /,
    *,
    account: str | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    **fields: Any,
) -> Charge:
    """Charge a saved card exactly once and return the charge's mirror row.

    The same arguments, guarantees and errors as
    :func:`~django_paycharge.services.create_charge` (``transaction_token_id``: the saved
    card's token, ``amount``, ``currency``, and the optional fields); pass an
    ``idempotency_key`` derived from the shop's own object (an order, a month's renewal).

    Refused before anything is kept or sent, with
    :class:`~django_paycharge.exceptions.SavedCardError` (``code`` the gateway's), when the
    mirror knows the token is not a recurring one, was deleted, or still waits for its CVV
    authorization. A call again with the key of a request already made answers that request
    (its charge), whatever the token has become since.
    """
    charge = ChargeCreateParams.given(params, fields)
    charge.to_body()  # every broken field named before the token is looked at
    name = account or conf.DEFAULT_ACCOUNT
    made = idempotency_key is not None and (
        ChargeRequest.objects.filter(caller_key=str(idempotency_key)).exists()
    )
    if not made:
        _refuse_known(name, charge.transaction_token_id)
    return create_charge(charge, account=name, idempotency_key=idempotency_key)


_MESSAGES = {
    NON_SUBSCRIPTION_PAYMENT: gettext_noop(
        "This token pays a subscription; the gateway charges it itself."
    ),
    RECURRING_TOKEN_DISABLED: gettext_noop(
        "This saved card was deleted; the customer must enter a card again."
    ),
    CVV_AUTHORIZATION_NOT_COMPLETED: gettext_noop(
        "This saved card's security code is not confirmed yet; ask the customer for it."
    ),
}
_NOT_RECURRING = gettext_noop("This transaction token is not a saved card (not recurring).")


def _refuse_known(account: str, token_id: uuid.UUID | str) -> None:
    """Raise :class:`SavedCardError` when what the mirror knows of the token refuses a charge."""
    row = TransactionTokenInfo.objects.filter(account=account, token_id=str(token_id)).first()
    if row is None:
        return
    code = charge_refusal(
        row.type,
        active=row.active,
        cvv_enabled=row.cvv_authorization_enabled,
        cvv_status=row.cvv_authorization_status,
        merchant_charge=True,
    )
    if code is not None:
        message = _MESSAGES.get(code, _NOT_RECURRING)
        raise SavedCardError(gettext(message), code=code)


def delete_saved_card(
    token_id: uuid.UUID | str,
    *,
    store_id: uuid.UUID | str | None = None,
    account: str | None = None,
) -> TransactionTokenInfo:
    """Delete a saved card at the gateway; it can no longer be charged. Returns its mirror row,
    inactive (``saved_card_deleted`` is announced once, whichever way the deletion is heard
    first: this call, the ``recurring_token_deleted`` webhook or a read). Deleting it again
    is harmless."""
    name, token, store = saved_card_place(token_id, store_id, account)
    get_client(name).tokens.delete(store, token)
    try:
        return refresh_saved_card(token, store, account=name)
    except NotFoundError:  # the gateway forgets it: mirrored as inactive
        return TransactionTokenInfo.objects.get(account=name, token_id=token)
