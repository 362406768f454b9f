"""Update a charge's metadata exactly once: the update kind of the exactly-once machine.

Setting the same keys twice gives the same charge, but a lost answer still
leaves the caller not knowing: the update takes the path of every request that
changes a charge (a committed request, its key, looked for by a read).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ...client.lifecycle_params import metadata_body
from ...exceptions import ChargeStateError
from ...models import Charge, ChargeActionRequest
from ..clients import get_client
from ..mirror import store_of, store_remote_charge
from .requests import LifecycleKind, act, reread


class UpdateKind(LifecycleKind):
    """``PATCH .../charges/{id}`` with the request's key; the result is the stored charge."""

    name = "update"
    reads_first = False  # any charge's metadata may change

    def prepare(self, charge: Charge, given: dict[str, Any]) -> dict[str, Any]:
        return given

    def state_error(self, status: str | None) -> ChargeStateError:
        return ChargeStateError(status=status)

    def send(self, request: ChargeActionRequest) -> Charge:
        charge = request.charge
        remote = get_client(request.account).charges.update(
            store_of(charge),
            charge.gateway_id,
            **request.params,
            idempotency_key=request.idempotency_key,
        )
        stored = store_remote_charge(
            remote, account=charge.account, payment_type=charge.payment_type
        )
        result: Charge = self.complete(request, stored)
        return result

    def find(self, request: ChargeActionRequest) -> Charge | None:
        fresh = reread(request.charge)
        metadata = fresh.metadata if isinstance(fresh.metadata, dict) else {}
        wanted = request.params.get("metadata") or {}
        if any(metadata.get(k, object()) != v for k, v in wanted.items()):
            return None
        found: Charge = self.complete(request, fresh)
        return found


UPDATE = UpdateKind()


def update_charge_metadata(
    charge: Charge,
    metadata: Mapping[str, Any],
    *,
    idempotency_key: uuid.UUID | str | None = None,
    requested_by: str = "",
) -> Charge:
    """Add or change metadata keys of a charge on the gateway; returns the updated mirror row.

    Exactly once like a refund: the request is committed with its key first,
    a lost answer is asked again with it and then looked for by a read
    (:class:`ActionOutcomeUnknownError` if the gateway never answers for sure).
    The customer's return query keeps the creation-time metadata.
    """
    given = metadata_body(metadata, required=True)  # raises InvalidParametersError naming bad keys
    updated: Charge = act(
        UPDATE, charge, given=given, idempotency_key=idempotency_key, requested_by=requested_by
    )
    return updated
