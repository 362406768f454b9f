"""Fetch and store the issuer token of an online-wallet or bank-transfer charge."""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext as _

from .. import signals
from ..exceptions import ChargeStateError, ConflictError, UnsupportedPaymentTypeError
from ..models import Charge, IssuerToken, PaymentType
from .charges import refresh_charge
from .clients import get_client

ISSUER_TOKEN_TYPES = (PaymentType.ONLINE, PaymentType.BANK_TRANSFER)


def fetch_issuer_token(charge: Charge) -> IssuerToken:
    """Fetch the charge's issuer token from the gateway, store it, and return it.

    Only online and bank_transfer charges have one. For bank_transfer the
    charge must be ``awaiting``: its status is checked against a fresh read
    first, and :class:`~django_paycharge.exceptions.ChargeStateError` (with
    ``status``) is raised otherwise.
    """
    client = get_client(charge.account)
    if charge.store_id is None or charge.transaction_token_id is None:
        raise UnsupportedPaymentTypeError(
            _("The gateway did not say which store or token this charge belongs to.")
        )
    if not charge.payment_type:
        token = client.tokens.retrieve(charge.store_id, charge.transaction_token_id)
        charge.payment_type = token.payment_type or ""
        Charge.objects.filter(pk=charge.pk).update(payment_type=charge.payment_type)
    if charge.payment_type not in ISSUER_TOKEN_TYPES:
        raise UnsupportedPaymentTypeError(
            _(
                "Issuer tokens exist only for online wallet and bank transfer charges; "
                "this charge's payment type is %(type)s."
            )
            % {"type": charge.payment_type or _("unknown")}
        )
    if charge.payment_type == PaymentType.BANK_TRANSFER:
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        _require_awaiting(fresh.status)
    try:
        remote = client.issuer_tokens.retrieve(charge.store_id, charge.gateway_id)
    except ConflictError:
        # The charge moved on between our read and the gateway's: say where it is now.
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        _require_awaiting(fresh.status)
        raise
    stored, _created = IssuerToken.objects.update_or_create(
        charge=charge,
        defaults={
            "payment_type": remote.payment_type or charge.payment_type,
            "call_method": remote.call_method or "",
            "issuer_token": remote.issuer_token or "",
            "payload": remote.payload,
            "account_id": remote.account_id or "",
            "branch_code": remote.branch_code or "",
            "branch_name": remote.branch_name or "",
            "account_holder_name": remote.account_holder_name or "",
            "account_number": remote.account_number or "",
            "raw": remote.raw,
            "fetched_at": timezone.now(),
        },
    )
    signals.send(signals.issuer_token_fetched, sender=Charge, charge=charge, issuer_token=stored)
    return stored


def _require_awaiting(status: str | None) -> None:
    if status != "awaiting":
        raise ChargeStateError(
            _(
                "The bank account can only be shown while the charge is awaiting payment; "
                "its status is now %(status)s."
            )
            % {"status": status or _("unknown")},
            status=status,
        )
