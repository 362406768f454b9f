"""The test URLconf plus shop views that let gateway errors escape (for the secrets test).

A shop's own view that calls a service and does not catch its error is the
common case; Django then renders the technical 500 page (DEBUG on) or mails
the admins (DEBUG off). Those pages show every frame's local variables.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from django_paycharge import services
from tests.urls import urlpatterns as base_patterns


def refresh_or_boom(request: HttpRequest, charge_id: str) -> HttpResponse:
    charge = services.refresh_charge(charge_id)
    return HttpResponse(charge.status)


def create_or_boom(request: HttpRequest, token_id: str) -> HttpResponse:
    charge = services.create_charge(transaction_token_id=token_id, amount=1000, currency="JPY")
    return HttpResponse(charge.status)


urlpatterns = [
    *base_patterns,
    path("boom/refresh/<str:charge_id>/", refresh_or_boom),
    path("boom/create/<str:token_id>/", create_or_boom),
]
