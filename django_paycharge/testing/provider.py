"""Issuer tokens, and the pages they point at: the payment provider's and the card issuer's.

Online wallets: for a token with call_method ``http_post``/``http_get`` the
issuer token is ``<base_url>/_fake/provider/<chargeId>``. Submitting the
payload there (POST form-encoded, or GET with the fields in the query) pays
the charge; ``action=fail`` fails it and ``action=cancel`` (or the
``.../cancel`` link) cancels it.

3-D Secure: a card charge that needs a challenge (see
:meth:`~django_paycharge.testing.records.Charge.needs_three_ds_challenge`)
waits ``awaiting``. Its 3-D Secure issuer token points at
``<base_url>/_fake/provider/<chargeId>/3ds`` (``http_post``); POSTing the
payload there shows the challenge page, whose "Authenticate" button passes it
(the card is then charged or authorized as usual) and "Cancel" fails it
(error 358).

Either way the browser is then sent (303) back to the shop (the charge's
``redirect.endpoint``, or ``three_ds.redirect_endpoint``) with
``serviceChargeId``, ``serviceTokenId`` and the creation-time metadata added
to the endpoint's own query.
"""

from __future__ import annotations

import hashlib
import html
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..client.vocabulary import FINAL_STATUSES
from .basics import ApiError
from .messages import HTML_HEADERS, FakeResponse, Request, html_page, redirect
from .records import Charge

if TYPE_CHECKING:
    from .app import FakeApp

_BROWSER_METHODS = ("http_get", "http_post")
_FORM = "application/x-www-form-urlencoded"
THREE_DS_CONTENT_TYPE = f"{_FORM}; charset=UTF-8"


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


def three_ds_payload(charge: Charge) -> dict[str, str]:
    """What the issuer's page needs: the charge and a signature it checks."""
    digest = hashlib.sha256(f"3ds:{charge.id}:{charge.amount}".encode()).hexdigest()
    return {"charge_id": charge.id, "message_type": "CReq", "signature": digest[:32]}


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


# -- the issuer tokens (gateway API) -----------------------------------------------------------


def issuer_token(fake: FakeApp, request: Request) -> Any:
    """Online: provider URL, payload, call_method. Bank transfer: the account, while awaiting."""
    state = fake.state
    with state.lock:
        charge = state.get_charge(request.credentials(), *_charge_ids(request))
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


def three_ds_issuer_token(fake: FakeApp, request: Request) -> Any:
    """For a card charge ``awaiting`` its challenge; 409 in any other status."""
    state = fake.state
    with state.lock:
        charge = state.get_charge(request.credentials(), *_charge_ids(request))
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
            "content_type": THREE_DS_CONTENT_TYPE,
        }


def _charge_ids(request: Request) -> tuple[str, str]:
    return request.params["store"], request.params["charge"]


# -- the wallet provider's page ----------------------------------------------------------------


def provider_page(fake: FakeApp, request: Request) -> Any:
    """The customer submits the payload: pay (or fail/cancel), then go back to the shop."""
    with fake.state.lock:
        charge = fake.state.charges.get(request.params["charge"])
    if charge is None:
        return html_page(404, "Unknown payment", "This payment does not exist.")
    if request.method == "POST":
        fields = request.form()
    else:
        fields = dict(parse_qsl(request.raw_query, keep_blank_values=True))
    _log(fake, charge, request, fields, kind=None)
    if request.method == "POST" and not _is_form(request):
        return html_page(415, "Unsupported form", f"Send the payload as {_FORM}.")
    expected = payload_for(charge)
    if any(fields.get(k) != v for k, v in expected.items()):
        text = "The payload fields are missing or altered."
        return html_page(400, "Invalid payment request", text)
    return _settle(fake, charge, fields.get("action", "pay"))


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
        return html_page(200, "Payment complete", f"Status of the payment: {charge.status}.")
    return redirect(return_url(charge))


# -- the card issuer's 3-D Secure challenge ----------------------------------------------------


def challenge_page(fake: FakeApp, request: Request) -> Any:
    """The card issuer asks the customer to confirm the payment."""
    charge, refusal = _challenged_charge(fake, request)
    if charge is None:
        return refusal
    if charge.status != "awaiting" or not charge.three_ds_challenge:
        return _nothing_to_authenticate(charge)
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
    return FakeResponse(200, dict(HTML_HEADERS), body.encode())


def challenge_answer(fake: FakeApp, request: Request) -> Any:
    """The customer's answer: charge (or fail) the card, then go back to the shop."""
    charge, refusal = _challenged_charge(fake, request)
    if charge is None:
        return refusal
    passed = request.form().get("result") == "pass"
    try:
        fake.state.finish_three_ds(charge.id, passed=passed)
    except ApiError:
        return _nothing_to_authenticate(charge)
    endpoint = (charge.three_ds or {}).get("redirect_endpoint")
    if not endpoint:
        return html_page(200, "Authentication complete", f"Status of the payment: {charge.status}.")
    return redirect(return_url(charge, endpoint))


def _challenged_charge(
    fake: FakeApp, request: Request
) -> tuple[Charge | None, FakeResponse | None]:
    """The charge a challenge request is about, or the page refusing the request."""
    with fake.state.lock:
        charge = fake.state.charges.get(request.params["charge"])
    if charge is None:
        return None, html_page(404, "Unknown payment", "This payment does not exist.")
    fields = request.form()
    _log(fake, charge, request, fields, kind="three_ds")
    if not _is_form(request):
        return None, html_page(
            415, "Unsupported form", f"Send the payload as {THREE_DS_CONTENT_TYPE}."
        )
    if fields.get("signature") != three_ds_payload(charge)["signature"]:
        return None, html_page(400, "Invalid authentication request", "The payload is altered.")
    return charge, None


def _nothing_to_authenticate(charge: Charge) -> FakeResponse:
    return html_page(409, "Nothing to authenticate", f"Status of the payment: {charge.status}.")


def _is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";")[0].strip().lower() == _FORM


def _log(
    fake: FakeApp, charge: Charge, request: Request, fields: dict[str, str], *, kind: str | None
) -> None:
    """Record a submission (``provider_log``): what the shop's page sent, and how."""
    entry = {
        "charge_id": charge.id,
        "method": request.method,
        "content_type": request.headers.get("content-type", ""),
        "fields": dict(fields),
        "raw_body": request.body.decode("utf-8", "replace"),
    }
    if kind is not None:
        entry = {"charge_id": charge.id, "kind": kind, **entry}
    fake.state.provider_log.append(entry)
