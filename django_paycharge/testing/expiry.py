"""``GET .../charges/{id}/expiry/latest``: when a convenience-store or bank payment ends.

The fake's rule, after the gateway's documentation: the charge's ``capture_at``
when it was given (it sets the payment deadline of these payment types), else
the token's ``data.expiration_period`` (ISO-8601, ``P7D`` or ``PT168H``; 30 days
when absent, the gateway's documented default for convenience stores) counted
from the charge's creation, to the end of that day in Japan (23:59:59+09:00).
Card and wallet charges have none: 404.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any

from .basics import ApiError

if TYPE_CHECKING:
    from .app import FakeApp
    from .messages import Request

#: The gateway's default payment period when the token names none.
DEFAULT_PERIOD = dt.timedelta(days=30)
JAPAN = dt.timezone(dt.timedelta(hours=9))
_DURATION = re.compile(r"P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")


def period(value: Any) -> dt.timedelta:
    """An ISO-8601 duration of weeks, days, hours, minutes and seconds (the default otherwise)."""
    found = _DURATION.match(value) if isinstance(value, str) and value != "P" else None
    if found is None:
        return DEFAULT_PERIOD
    weeks, days, hours, minutes, seconds = (int(g or 0) for g in found.groups())
    return dt.timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)


def expiration_date(created: dt.datetime, capture_at: str | None, data: dict[str, Any]) -> str:
    """The deadline of a charge created at ``created`` (aware), as the gateway writes times."""
    if capture_at:
        return capture_at
    last_day = (created + period(data.get("expiration_period"))).astimezone(JAPAN)
    end = last_day.replace(hour=23, minute=59, second=59, microsecond=0)
    return end.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def latest_expiry(fake: FakeApp, request: Request) -> Any:
    """The latest expiry of a konbini or bank-transfer charge (never extended by the fake)."""
    state = fake.state
    with state.lock:
        charge = state.get_charge(request.credentials(), *_ids(request))
        if charge.token.payment_type not in ("konbini", "bank_transfer"):
            raise ApiError(404, "NOT_FOUND", [("expiry", "NOT_FOUND")])
        return 200, {
            "id": charge.id,
            "charge_id": charge.id,
            "expiration_date": expiration_date(
                charge.created, charge.capture_at, charge.token.data
            ),
            "extension_count": 0,
            "created_on": charge.created_on,
            "updated_on": charge.created_on,
        }


def _ids(request: Request) -> tuple[str, str]:
    return request.params["store"], request.params["charge"]
