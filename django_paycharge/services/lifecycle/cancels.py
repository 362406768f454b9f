"""Cancel a charge exactly once: the cancel kind of the exactly-once machine."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext

from ...client.lifecycle_params import metadata_body
from ...client.vocabulary import CANCEL_NOT_ALLOWED, CANCELABLE_STATUSES
from ...exceptions import ChargeStateError
from ...models import Cancel, Charge, ChargeActionRequest
from ..clients import get_client
from ..mirror import store_cancel, store_of
from .requests import LifecycleKind, act, find_made, reread, send_child


class CancelKind(LifecycleKind):
    """``POST .../cancels`` with the request's key; the result is the stored :class:`Cancel`."""

    name = "cancel"
    link = "cancel"
    blocked_by = frozenset({"capture", "cancel", "refund"})
    # Sent again after a lost answer, a cancel that went through is "not allowed" any more.
    done_before_codes = frozenset({CANCEL_NOT_ALLOWED})
    status_codes = frozenset({CANCEL_NOT_ALLOWED})

    def prepare(self, charge: Charge, given: dict[str, Any]) -> dict[str, Any]:
        if charge.status not in CANCELABLE_STATUSES:
            raise self.state_error(charge.status)
        return given

    def state_error(self, status: str | None) -> ChargeStateError:
        message = gettext("This charge cannot be canceled in its status %(s)s.")
        return ChargeStateError(message % {"s": status or gettext("unknown")}, status=status)

    def send(self, request: ChargeActionRequest) -> Cancel:
        charge = request.charge
        cancel: Cancel = send_child(
            self,
            request,
            lambda client: client.cancels,
            store_cancel,
            # A cancel changes the charge too: its row is read again before charge_canceled.
            after_reread=lambda: reread(charge),
        )
        return cancel

    def find(self, request: ChargeActionRequest) -> Cancel | None:
        charge = request.charge
        cancels = get_client(request.account).cancels.list(store_of(charge), charge.gateway_id)
        found: Cancel | None = find_made(self, request, cancels, lambda _: True, store_cancel)
        if found is not None:
            reread(charge)
        return found


CANCEL = CancelKind()


def cancel_charge(
    charge: Charge,
    *,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Cancel:
    """Cancel a charge exactly once; returns the cancel (``charge_canceled`` when it succeeds).

    The gateway decides what it accepts; a charge already final (other than
    ``successful``) is refused at once with :class:`ChargeStateError`. While
    another capture, cancel or refund of the charge is being sent,
    :class:`ChargeBusyError`; an answer that never comes,
    :class:`ActionOutcomeUnknownError`.
    """
    params = metadata_body(metadata, required=False)
    cancel: Cancel = act(
        CANCEL, charge, given=params, idempotency_key=idempotency_key, requested_by=requested_by
    )
    return cancel
