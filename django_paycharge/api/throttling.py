"""Rate limits of the create endpoint (scope ``paycharge_create``)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from .. import conf


class ChargeCreateThrottle(SimpleRateThrottle):
    """Limits charge creation per user (or per client IP for anonymous callers).

    The rate is ``PAYCHARGE["API_CREATE_THROTTLE_RATE"]`` (DRF's ``"20/minute"``
    form; ``None`` turns it off), read on every request.
    """

    scope = "paycharge_create"

    def get_rate(self) -> str | None:
        rate = conf.get_setting("API_CREATE_THROTTLE_RATE")
        return str(rate) if rate else None

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        user = request.user
        ident = user.pk if user is not None and user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
