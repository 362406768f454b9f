"""The resource services of :class:`~django_paycharge.client.PayChargeClient`: ``client.charges``,
``.issuer_tokens``, ``.tokens``, ``.webhooks``, ``.refunds``, ``.cancels`` and ``.subscriptions``.

Every method validates its arguments before sending anything and raises
:class:`~django_paycharge.exceptions.InvalidParametersError` naming each
broken field.
"""

from __future__ import annotations

from .charges import Charges, IssuerTokens, Tokens
from .refunds_cancels import Cancels, Refunds
from .subscriptions import Subscriptions
from .webhook_configs import Webhooks

__all__ = ["Cancels", "Charges", "IssuerTokens", "Refunds", "Subscriptions", "Tokens", "Webhooks"]
