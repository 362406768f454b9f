"""Issuer tokens and the fake payment provider page they point at.

For an online token with call_method ``http_post``/``http_get`` the issuer
token is ``<base_url>/_fake/provider/<chargeId>``. Submitting the payload
there (POST form-encoded, or GET with the fields in the query) pays the
charge; a field ``action=fail`` fails it and ``action=cancel`` (or the
``.../cancel`` link) cancels it. The browser is then sent (303) to the
charge's ``redirect.endpoint`` with ``serviceChargeId``, ``serviceTokenId``
and the creation-time metadata added to the endpoint's own query.
"""

from __future__ import annotations

import hashlib
import html
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._common import FINAL_STATUSES, ApiError, Json
from .app import FakeResponse, Request, route
from .records import Charge

if TYPE_CHECKING:
    from .app import FakeApp

_BROWSER_METHODS = ("http_get", "http_post")
_FORM = "application/x-www-form-urlencoded"


def payload_for(charge: Charge) -> dict[str, str]:
    """The provider payload: string fields only, with a signature the page checks."""
    digest = hashlib.sha256(f"{charge.id}:{charge.amount}:{charge.currency}".encode()).hexdigest()
    return {
        "charge_id": charge.id,
        "brand": charge.token.brand or "",
        "amount": str(charge.amount),
        "currency": charge.currency,
        "signature": digest[:32],
    }


@route("GET", "/stores/{store}/charges/{charge}/issuer_token")
def issuer_token(fake: FakeApp, request: Request) -> Any:
    """Online: provider URL, payload, call_method. Bank transfer: the account, while awaiting."""
    assert request.app is not None
    state = fake.state
    with state.lock:
        charge = state.get_charge(request.app, request.params["store"], request.params["charge"])
        payment_type = charge.token.payment_type
        if payment_type == "online":
            call_method = str(charge.token.data.get("call_method", "http_post"))
            if call_method in _BROWSER_METHODS:
                token = f"{fake.base_url}/_fake/provider/{charge.id}"
            else:
                token = f"fake-{call_method}-token-{charge.id.replace('-', '')}"
            return 200, {
                "payment_type": "online",
                "issuer_token": token,
                "payload": payload_for(charge),
                "call_method": call_method,
            }
        if payment_type == "bank_transfer":
            if charge.status != "awaiting":
                raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
            return 200, {
                "payment_type": "bank_transfer",
                "account_id": f"acct-{charge.id[:8]}",
                "branch_code": "123",
                "branch_name": "Fake Branch",
                "account_holder_name": "PAYCHARGE FAKE",
                "account_number": str(int(charge.id[:8], 16) % 10_000_000).zfill(7),
            }
        raise ApiError(400, "UNSUPPORTED_PAYMENT_TYPE", [("payment_type", payment_type)])


@route("GET", "/_fake/provider/{charge}", auth=None)
@route("POST", "/_fake/provider/{charge}", auth=None)
def provider_page(fake: FakeApp, request: Request) -> Any:
    """The customer submits the payload: pay (or fail/cancel), then go back to the shop."""
    state = fake.state
    with state.lock:
        charge = state.charges.get(request.params["charge"])
    if charge is None:
        return page(404, "Unknown payment", "This payment does not exist.")
    content_type = request.headers.get("content-type", "")
    if request.method == "POST":
        fields = dict(parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True))
    else:
        fields = dict(parse_qsl(request.raw_query, keep_blank_values=True))
    state.provider_log.append(
        {
            "charge_id": charge.id,
            "method": request.method,
            "content_type": content_type,
            "fields": dict(fields),
            "raw_body": request.body.decode("utf-8", "replace"),
        }
    )
    if request.method == "POST" and content_type.split(";")[0].strip().lower() != _FORM:
        return page(415, "Unsupported form", f"Send the payload as {_FORM}.")
    expected = payload_for(charge)
    if any(fields.get(k) != v for k, v in expected.items()):
        return page(400, "Invalid payment request", "The payload fields are missing or altered.")
    return _settle(fake, charge, fields.get("action", "pay"))


@route("GET", "/_fake/provider/{charge}/cancel", auth=None)
def provider_cancel(fake: FakeApp, request: Request) -> Any:
    """The customer abandons the payment: the charge is canceled."""
    charge = fake.state.charge(request.params["charge"])
    return _settle(fake, charge, "cancel")


def _settle(fake: FakeApp, charge: Charge, action: str) -> FakeResponse:
    state = fake.state
    state.advance(charge.id)  # a payment page can be reached before processing finished
    if charge.status not in FINAL_STATUSES:
        if action == "fail":
            state.fail(charge.id, 306, "payment declined by the provider")
        elif action == "cancel":
            state.expire(charge.id)
        else:
            state.complete(charge.id)
    if charge.redirect_endpoint is None:
        return page(200, "Payment complete", f"Status of the payment: {charge.status}.")
    return FakeResponse(303, {"Location": return_url(charge), "Content-Type": "text/plain"}, b"")


def return_url(charge: Charge, endpoint: str | None = None) -> str:
    """``endpoint`` (the redirect endpoint by default) with the charge id, token id and
    creation-time metadata added (later metadata updates are not included)."""
    endpoint = endpoint or charge.redirect_endpoint
    assert endpoint is not None
    parts = urlsplit(endpoint)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [("serviceChargeId", charge.id), ("serviceTokenId", charge.token.id)]
    query += [(k, _query_value(v)) for k, v in charge.initial_metadata.items()]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _query_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value)


def page(status: int, title: str, text: str) -> FakeResponse:
    """A small HTML page of the fake provider."""
    body = (
        f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></body></html>"
    )
    return FakeResponse(status, {"Content-Type": "text/html; charset=utf-8"}, body.encode())


__all__: list[str] = ["Json", "page", "payload_for", "return_url"]
