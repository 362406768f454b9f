"""Fetch and store the issuer token of an online-wallet or bank-transfer charge."""

from __future__ import annotations

from typing import Any

from django.db import router, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ... import outbox, signals
from ...exceptions import ChargeStateError, ConflictError, UnsupportedPaymentTypeError
from ...models import Charge, ChargeStatus, IssuerToken, PaymentType
from ..clients import get_client
from ..mirror import refresh_charge, store_of
from .payment_types import known_payment_type

ISSUER_TOKEN_TYPES = (PaymentType.ONLINE, PaymentType.BANK_TRANSFER)


def fetch_issuer_token(charge: Charge) -> IssuerToken:
    """Fetch the charge's issuer token from the gateway, store it, and return it.

    Only online and bank_transfer charges have one, and card charges awaiting
    3-D Secure (see :func:`fetch_three_ds_issuer_token`). Its status is checked
    against a fresh read first: a bank transfer must be ``awaiting``, a wallet
    payment ``pending`` or ``awaiting`` (a canceled or finished one must never
    hand out the provider's payment URL again); otherwise
    :class:`~django_paycharge.exceptions.ChargeStateError` (with ``status``) is
    raised.
    """
    client = get_client(charge.account)
    if charge.store_id is None or charge.transaction_token_id is None:
        raise UnsupportedPaymentTypeError(
            _("The gateway did not say which store or token this charge belongs to.")
        )
    if known_payment_type(charge) == PaymentType.CARD:
        return fetch_three_ds_issuer_token(charge)  # a card's only issuer token is 3-D Secure's
    if charge.payment_type not in ISSUER_TOKEN_TYPES:
        raise UnsupportedPaymentTypeError(
            _(
                "Issuer tokens exist only for online wallet and bank transfer charges; "
                "this charge's payment type is %(type)s."
            )
            % {"type": charge.payment_type or _("unknown")}
        )
    fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
    _require_open(fresh)
    try:
        remote = client.issuer_tokens.retrieve(charge.store_id, charge.gateway_id)
    except ConflictError:
        # The charge moved on between our read and the gateway's: say where it is now.
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        _require_open(fresh)
        raise
    stored = _store(charge, remote.raw, remote.payment_type or charge.payment_type, remote)
    return stored


def fetch_three_ds_issuer_token(charge: Charge) -> IssuerToken:
    """Fetch, store and return where the customer authenticates a card charge (3-D Secure).

    The charge must be ``awaiting``, checked against a fresh read;
    :class:`ChargeStateError` (with ``status``) otherwise. The token is stored
    as the charge's issuer token (``payment_type="card"``, ``content_type`` in
    ``raw``), so the template tag renders it like any ``http_post`` token.
    """
    fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
    _require_awaiting(fresh.status, three_ds=True)
    client = get_client(charge.account)
    try:
        remote = client.issuer_tokens.retrieve_three_ds(store_of(charge), charge.gateway_id)
    except ConflictError:
        # Authenticated (or abandoned) between our read and the gateway's: say where it is.
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        _require_awaiting(fresh.status, three_ds=True)
        raise
    stored = _store(charge, remote.raw, remote.payment_type or "card", remote)
    return stored


def _store(charge: Charge, raw: dict[str, Any], payment_type: str, remote: Any) -> IssuerToken:
    """The charge's one issuer token row, replaced by what the gateway just sent; announced."""
    text = {name: getattr(remote, name, None) or "" for name in _TEXT_FIELDS}
    alias = router.db_for_write(IssuerToken)
    values = {
        **text,
        "payment_type": payment_type,
        "payload": remote.payload,
        "raw": raw,
        "fetched_at": timezone.now(),
    }
    with transaction.atomic(using=alias):
        # Written first, in one statement: a read first would leave SQLite's transaction
        # unable to become a writer when another connection wrote since ("database is
        # locked" at once, whatever the busy time-out: a payment page's 500 under webhooks).
        IssuerToken.objects.using(alias).bulk_create(
            [IssuerToken(charge=charge, **values)],
            update_conflicts=True,
            unique_fields=["charge"],
            update_fields=list(values),
        )
        stored = IssuerToken.objects.using(alias).get(charge=charge)
        outbox.send(
            signals.issuer_token_fetched,
            sender=Charge,
            using=alias,
            charge=charge,
            issuer_token=stored,
        )
    return stored


_TEXT_FIELDS = (
    "call_method",
    "issuer_token",
    "account_id",
    "branch_code",
    "branch_name",
    "account_holder_name",
    "account_number",
)


#: Statuses in which a wallet payment can still be made (pending: not processed yet).
_WALLET_OPEN = ("pending", "awaiting")


def _require_open(charge: Charge) -> None:
    """Refuse the issuer token of a charge the customer can no longer pay."""
    if charge.payment_type == PaymentType.BANK_TRANSFER:
        _require_awaiting(charge.status)
    elif charge.status not in _WALLET_OPEN:
        message = _(
            "The wallet payment can only be continued while it waits for the customer; "
            "its status is now %(status)s."
        )
        raise ChargeStateError(message % {"status": _label(charge.status)}, status=charge.status)


def _label(status: str | None) -> str:
    """The status as staff and customers read it (its code when the gateway sent a new one)."""
    return str(dict(ChargeStatus.choices).get(status or "", status or _("unknown")))


def _require_awaiting(status: str | None, *, three_ds: bool = False) -> None:
    if status == "awaiting":
        return
    if three_ds:
        message = _(
            "The card payment waits for 3-D Secure only while it is awaiting the customer; "
            "its status is now %(status)s."
        )
    else:
        message = _(
            "The bank account can only be shown while the charge is awaiting payment; "
            "its status is now %(status)s."
        )
    raise ChargeStateError(message % {"status": _label(status)}, status=status)
