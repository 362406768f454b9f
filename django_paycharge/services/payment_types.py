"""Fill in the payment type of charges a bulk sync stored without it.

A charge does not carry the payment type of its transaction token, and a
list page must not cost one extra request per charge; this reads each
distinct token once, in the background or from ``paycharge_sync``.
"""

from __future__ import annotations

import logging

from .. import conf
from ..exceptions import NotFoundError, PayChargeError
from ..models import Charge
from .clients import get_client

logger = logging.getLogger("django_paycharge.services")


def fill_payment_types(account: str | None = None, *, limit: int = 500) -> int:
    """Read up to ``limit`` distinct transaction tokens; returns how many charges were filled."""
    name = account or conf.DEFAULT_ACCOUNT
    client = get_client(name)
    missing = (
        Charge.objects.filter(
            account=name,
            payment_type="",
            transaction_token_id__isnull=False,
            store_id__isnull=False,
        )
        .values_list("store_id", "transaction_token_id")
        .distinct()
        .order_by()[:limit]
    )
    filled = 0
    for store_id, token_id in list(missing):
        assert store_id is not None and token_id is not None  # filtered above
        try:
            token = client.tokens.retrieve(store_id, token_id)
        except NotFoundError:
            logger.warning("Transaction token %s is not on the gateway", token_id)
            continue
        except PayChargeError as exc:
            logger.info("Payment types not filled now: %s", type(exc).__name__)
            break
        if token.payment_type:
            filled += Charge.objects.filter(
                account=name, transaction_token_id=token_id, payment_type=""
            ).update(payment_type=token.payment_type)
    return filled
