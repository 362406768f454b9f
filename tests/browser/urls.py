"""Pages for the browser tests: a payment page under a strict CSP, and a landing page."""

from __future__ import annotations

import secrets

from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import include, path

from django_paycharge.models import IssuerToken

PAGE = """{% load paycharge %}<!DOCTYPE html><html><head><title>Pay</title></head><body>
<h1>Paying</h1>{% paycharge_issuer_token token %}</body></html>"""


def strict_csp_page(request: HttpRequest, charge_id: str) -> HttpResponse:
    token = IssuerToken.objects.get(charge__gateway_id=charge_id)
    use_nonce = request.GET.get("nonce") != "0"
    nonce = secrets.token_urlsafe(16)
    context = {"token": token, "csp_nonce": nonce if use_nonce else ""}
    html = engines["django"].from_string(PAGE).render(context, request)
    response = HttpResponse(html)
    response["Content-Security-Policy"] = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; "
        "form-action 'self' http://127.0.0.1:* http://localhost:*"
    )
    return response


def landing(request: HttpRequest) -> HttpResponse:
    # The empty icon: without it the browser asks for /favicon.ico after the page loaded,
    # and the 404 reached the tests' console check or not, as the timing fell.
    return HttpResponse(
        '<!DOCTYPE html><html><head><title>Shop</title><link rel="icon" href="data:,">'
        "</head><body><h1>Back at the shop</h1></body></html>"
    )


urlpatterns = [
    path("csp-pay/<str:charge_id>/", strict_csp_page),
    path("landing/", landing),
    path("payments/", include("django_paycharge.urls")),
]
