"""The 3-D Secure issuer token of a card charge waiting for the customer's authentication."""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext as _

from .. import signals
from ..exceptions import ChargeStateError, ConflictError
from ..models import Charge, IssuerToken
from .actions import store_of
from .charges import refresh_charge
from .clients import get_client


def fetch_three_ds_issuer_token(charge: Charge) -> IssuerToken:
    """Fetch, store and return where the customer authenticates a card charge.

    The charge must be ``awaiting`` (3-D Secure), checked against a fresh
    read; :class:`ChargeStateError` (with ``status``) otherwise. The token is
    stored as the charge's issuer token (``payment_type="card"``, and
    ``content_type`` in ``raw``), so the template tag renders it like any
    ``http_post`` token.
    """
    fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
    _require_awaiting(fresh.status)
    client = get_client(charge.account)
    try:
        remote = client.issuer_tokens.retrieve_three_ds(store_of(charge), charge.gateway_id)
    except ConflictError:
        # Authenticated (or abandoned) between our read and the gateway's: say where it is.
        fresh = refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
        _require_awaiting(fresh.status)
        raise
    stored, _created = IssuerToken.objects.update_or_create(
        charge=charge,
        defaults={
            "payment_type": remote.payment_type or "card",
            "call_method": remote.call_method or "",
            "issuer_token": remote.issuer_token or "",
            "payload": remote.payload,
            "account_id": "",
            "branch_code": "",
            "branch_name": "",
            "account_holder_name": "",
            "account_number": "",
            "raw": remote.raw,
            "fetched_at": timezone.now(),
        },
    )
    signals.issuer_token_fetched.send(sender=Charge, charge=charge, issuer_token=stored)
    return stored


def _require_awaiting(status: str) -> None:
    if status != "awaiting":
        raise ChargeStateError(
            _(
                "The card payment waits for 3-D Secure only while it is awaiting the customer; "
                "its status is now %(status)s."
            )
            % {"status": status},
            status=status,
        )
