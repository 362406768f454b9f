"""What a customer must do to pay a convenience-store or bank-transfer charge.

The charge is created ``awaiting``: nothing more happens until the customer
pays, at a store's counter or by a transfer, before a deadline. What the
gateway says about it, gathered in one place for the payment page and the
shop's own pages:

- the **deadline**: the charge's latest expiry (``GET .../expiry/latest``, kept
  as the charge's ``payment_deadline`` for the staff's lists), or else its
  ``capture_at`` (which sets the deadline of these payment types);
- for a convenience store, **which store** (the transaction token's
  ``data.convenience_store``) and **where the payment number comes from**:
  the gateway sends it, with how to pay at that store, to the email address
  of the transaction token (the address the customer gave);
- for a bank transfer, **the account** (the issuer token, fetched and stored).

Nothing else here is stored but the bank account (as the issuer token); a deadline
or a store the gateway does not say is ``None``, and the page says where to
find it instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from ...exceptions import ChargeStateError, PayChargeError, UnsupportedPaymentTypeError
from ...models import Charge, ChargeStatus, ConvenienceStore, IssuerToken, PaymentType
from ..clients import get_client
from ..mirror import refresh_charge, store_of
from .issuer_tokens import fetch_issuer_token
from .payment_types import known_payment_type

#: The payment types whose customer pays later, by hand.
INSTRUCTED_TYPES = (PaymentType.KONBINI, PaymentType.BANK_TRANSFER)


@dataclass(frozen=True)
class PaymentInstructions:
    """What the customer must do, as the gateway gave it (``None``: not said)."""

    charge: Charge
    deadline: datetime | None = None
    convenience_store: str | None = None
    email: str | None = None
    bank_account: IssuerToken | None = None

    @property
    def payment_type(self) -> str:
        return self.charge.payment_type

    @property
    def store_name(self) -> str | None:
        """The store as customers know it (the gateway's code when it is a new one)."""
        code = self.convenience_store
        if not code:
            return None
        return str(dict(ConvenienceStore.choices).get(code, code))


def payment_instructions(charge: Charge) -> PaymentInstructions:
    """Read what the customer of an ``awaiting`` konbini or bank-transfer charge must do.

    Raises :class:`~django_paycharge.exceptions.UnsupportedPaymentTypeError`
    for other payment types, and
    :class:`~django_paycharge.exceptions.ChargeStateError` (with ``status``)
    when the charge, read again from the gateway, no longer awaits payment.
    The bank account of a transfer is needed (its errors are raised); the
    deadline and the token's details are not (a failed read leaves them None).
    """
    if known_payment_type(charge) not in INSTRUCTED_TYPES:
        raise UnsupportedPaymentTypeError(
            _("Only convenience-store and bank-transfer payments are paid by hand.")
        )
    account = None
    if charge.payment_type == PaymentType.BANK_TRANSFER:
        account = fetch_issuer_token(charge)  # reads the charge again: it must be awaiting
    else:
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        if fresh.status != ChargeStatus.AWAITING:
            label = dict(ChargeStatus.choices).get(fresh.status or "", fresh.status)
            raise ChargeStateError(
                _("The payment no longer waits for the customer; its status is now %(status)s.")
                % {"status": label or _("unknown")},
                status=fresh.status,
            )
        charge = fresh
    data, email = _token_details(charge)
    store = data.get("convenience_store") if charge.payment_type == PaymentType.KONBINI else None
    return PaymentInstructions(
        charge=charge,
        deadline=_deadline(charge),
        convenience_store=store if isinstance(store, str) and store else None,
        email=email,
        bank_account=account,
    )


def _token_details(charge: Charge) -> tuple[dict[str, Any], str | None]:
    """The transaction token's ``data`` and email ({} and None when it cannot be read now)."""
    if charge.transaction_token_id is None:
        return {}, None
    try:
        token = get_client(charge.account).tokens.retrieve(
            store_of(charge), charge.transaction_token_id
        )
    except PayChargeError:
        return {}, None
    data = token.data if isinstance(token.data, dict) else {}
    return data, token.email or None


def _deadline(charge: Charge) -> datetime | None:
    """The charge's latest expiry, kept on the charge for the staff's lists (the dashboard
    shows what the customer's page showed, without a gateway call per row)."""
    try:
        expiry = get_client(charge.account).charges.expiry(store_of(charge), charge.gateway_id)
    except PayChargeError:
        return charge.payment_deadline or charge.capture_at
    if expiry.expiration_date is not None and expiry.expiration_date != charge.payment_deadline:
        Charge.objects.filter(pk=charge.pk).update(payment_deadline=expiry.expiration_date)
        charge.payment_deadline = expiry.expiration_date
    return expiry.expiration_date or charge.capture_at
