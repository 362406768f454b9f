"""The shop's operations pages: the payment app's Prometheus metrics, behind a bearer token.

As docs/monitoring.md shows: Prometheus sends ``Authorization: Bearer <SHOP_METRICS_TOKEN>``
(scripts/demo prints a curl line). Without a token set, nobody gets in.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden

from django_paycharge.views.metrics import metrics


def protected_metrics(request: HttpRequest) -> HttpResponse:
    token = settings.SHOP_METRICS_TOKEN
    sent = request.headers.get("Authorization", "")
    if not token or not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return HttpResponseForbidden()
    return metrics(request)
