"""3-D Secure in the fake: the charge's 3-D Secure issuer token and the issuer's challenge page.

A card charge that needs a challenge (see
:func:`~django_paycharge.testing.lifecycle_state.needs_three_ds_challenge`)
waits ``awaiting``. Its 3-D Secure issuer token points at
``<base_url>/_fake/provider/<chargeId>/3ds`` with ``call_method=http_post``;
POSTing the payload there (form-encoded) shows the challenge page, whose
"Authenticate" button passes it (the card is then charged or authorized as
usual) and "Cancel" fails it (error 358). The browser is then sent (303) to
``three_ds.redirect_endpoint`` with ``serviceChargeId``, ``serviceTokenId``
and the creation-time metadata.
"""

from __future__ import annotations

import hashlib
import html
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from ._common import ApiError
from .app import FakeResponse, Request, route
from .provider import page, return_url
from .records import Charge

if TYPE_CHECKING:
    from .app import FakeApp

CONTENT_TYPE = "application/x-www-form-urlencoded; charset=UTF-8"


def three_ds_payload(charge: Charge) -> dict[str, str]:
    """What the issuer's page needs: the charge and a signature it checks."""
    digest = hashlib.sha256(f"3ds:{charge.id}:{charge.amount}".encode()).hexdigest()
    return {"charge_id": charge.id, "message_type": "CReq", "signature": digest[:32]}


@route("GET", "/stores/{store}/charges/{charge}/three_ds/issuer_token")
def three_ds_issuer_token(fake: FakeApp, request: Request) -> Any:
    """For a card charge ``awaiting`` its challenge; 409 in any other status."""
    assert request.app is not None
    state = fake.state
    with state.lock:
        charge = state.get_charge(request.app, request.params["store"], request.params["charge"])
        if charge.token.payment_type != "card":
            payment_type = charge.token.payment_type
            raise ApiError(400, "UNSUPPORTED_PAYMENT_TYPE", [("payment_type", payment_type)])
        if charge.status != "awaiting" or not charge.three_ds_challenge:
            raise ApiError(409, "INVALID_CHARGE_STATUS", [("status", charge.status)])
        return 200, {
            "payment_type": "card",
            "issuer_token": f"{fake.base_url}/_fake/provider/{charge.id}/3ds",
            "call_method": "http_post",
            "payload": three_ds_payload(charge),
            "content_type": CONTENT_TYPE,
        }


def _fields(request: Request) -> dict[str, str]:
    return dict(parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True))


def _log(fake: FakeApp, charge: Charge, request: Request, fields: dict[str, str]) -> None:
    fake.state.provider_log.append(
        {
            "charge_id": charge.id,
            "kind": "three_ds",
            "method": request.method,
            "path": request.path,
            "content_type": request.headers.get("content-type", ""),
            "fields": dict(fields),
            "raw_body": request.body.decode("utf-8", "replace"),
        }
    )


def _checked(fake: FakeApp, request: Request) -> tuple[Charge | None, FakeResponse | None]:
    with fake.state.lock:
        charge = fake.state.charges.get(request.params["charge"])
    if charge is None:
        return None, page(404, "Unknown payment", "This payment does not exist.")
    fields = _fields(request)
    _log(fake, charge, request, fields)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return None, page(415, "Unsupported form", f"Send the payload as {CONTENT_TYPE}.")
    if fields.get("signature") != three_ds_payload(charge)["signature"]:
        return None, page(400, "Invalid authentication request", "The payload is altered.")
    return charge, None


@route("POST", "/_fake/provider/{charge}/3ds", auth=None)
def challenge_page(fake: FakeApp, request: Request) -> Any:
    """The card issuer asks the customer to confirm the payment."""
    charge, refusal = _checked(fake, request)
    if charge is None:
        return refusal
    if charge.status != "awaiting" or not charge.three_ds_challenge:
        return page(409, "Nothing to authenticate", f"Status of the payment: {charge.status}.")
    action = html.escape(f"{fake.base_url}/_fake/provider/{charge.id}/3ds/answer")
    signature = html.escape(three_ds_payload(charge)["signature"])
    body = (
        # The empty icon spares browsers a /favicon.ico request the fake would answer 404.
        '<!doctype html><html><head><title>3-D Secure</title><link rel="icon" href="data:,">'
        "</head><body>"
        "<h1>Confirm your payment</h1>"
        f"<p>Your card issuer asks you to confirm a payment of {charge.amount} "
        f"{html.escape(charge.currency)}.</p>"
        f'<form method="post" action="{action}">'
        f'<input type="hidden" name="signature" value="{signature}">'
        '<button type="submit" name="result" value="pass" id="three-ds-pass">Authenticate</button> '
        '<button type="submit" name="result" value="fail" id="three-ds-fail">Cancel</button>'
        "</form></body></html>"
    )
    return FakeResponse(200, {"Content-Type": "text/html; charset=utf-8"}, body.encode())


@route("POST", "/_fake/provider/{charge}/3ds/answer", auth=None)
def challenge_answer(fake: FakeApp, request: Request) -> Any:
    """The customer's answer: charge (or fail) the card, then go back to the shop."""
    charge, refusal = _checked(fake, request)
    if charge is None:
        return refusal
    passed = _fields(request).get("result") == "pass"
    try:
        fake.state.finish_three_ds(charge.id, passed=passed)
    except ApiError:
        return page(409, "Nothing to authenticate", f"Status of the payment: {charge.status}.")
    endpoint = (charge.three_ds or {}).get("redirect_endpoint")
    if not endpoint:
        return page(200, "Authentication complete", f"Status of the payment: {charge.status}.")
    location = return_url(charge, endpoint)
    return FakeResponse(303, {"Location": location, "Content-Type": "text/plain"}, b"")
