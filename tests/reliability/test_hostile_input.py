"""Hostile input: the issuer-token tag, the return view (open redirects), the admin (XSS)."""

from __future__ import annotations

import uuid

import pytest
from django.template import Context, Template
from django.test import RequestFactory, override_settings
from django.urls import reverse
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import Charge, IssuerToken
from django_paycharge.views.returns import next_url

from .hostile import XSS, lands_off_site, redirect_corpus, unescaped

pytestmark = pytest.mark.django_db

CALL_METHODS = ["http_post", "http_get", "sdk", "web", "app", "bank_transfer"]
_TAG = Template("{% load paycharge %}{% paycharge_issuer_token token nonce=nonce %}")


def _charge(**fields) -> Charge:
    now = timezone.now()
    values = {
        "gateway_id": uuid.uuid4(),
        "store_id": uuid.uuid4(),
        "transaction_token_id": uuid.uuid4(),
        "requested_amount": 1000,
        "requested_currency": "JPY",
        "status": "awaiting",
        "mode": "test",
        "created_on": now,
        "synced_at": now,
        "first_seen_at": now,
        "payment_type": "online",
        "raw": {},
    }
    return Charge.objects.create(**{**values, **fields})


def test_issuer_token_tag_escapes_every_hostile_value(reliability_record):
    cases, damage = 0, {"unescaped": 0, "foreign_scripts": 0}
    for method in CALL_METHODS:
        for evil in XSS:
            bank = method == "bank_transfer"
            for url in ("https://provider.example/pay", evil, f"https://provider.example/{evil}"):
                charge = _charge(payment_type="bank_transfer" if bank else "online")
                token = IssuerToken(
                    charge=charge,
                    payment_type="bank_transfer" if bank else "online",
                    call_method="" if bank else method,
                    issuer_token="" if bank else url,
                    payload=None if bank else {evil: evil, "k": evil, "n": [evil, {evil: 1}]},
                    account_id=evil if bank else "",
                    branch_name=evil if bank else "",
                    branch_code=evil if bank else "",
                    account_holder_name=evil if bank else "",
                    account_number=evil if bank else "",
                    fetched_at=timezone.now(),
                )
                html = _TAG.render(Context({"token": token, "nonce": evil}))
                cases += 1
                damage["unescaped"] += unescaped(html)
                # Ours: one auto-submit/navigate script for http_post/http_get, none otherwise.
                own = 1 if "<form" in html or "window.location" in html else 0
                scripts = html.lower().count("<script") - html.count('type="application/json"')
                damage["foreign_scripts"] += max(0, scripts - own)
                charge.delete()
    reliability_record(
        "Issuer-token template tag: hostile values",
        f"{len(XSS)} XSS payloads in payload keys/values, provider URL, nonce and bank "
        "fields x 6 call methods x 3 URL placements",
        cases,
        damage,
    )


def test_return_view_never_redirects_off_site(fake_gateway, settings, client, reliability_record):
    corpus = redirect_corpus()
    assert len(corpus) >= 500
    token = fake_gateway.create_transaction_token("online", brand="paypay", call_method="http_post")
    charge = services.create_charge(transaction_token_id=token["id"], amount=1200, currency="JPY")
    request = RequestFactory().get("/payments/return/")
    damage = {"off_site_redirects": 0}
    through_view = 0
    for i, target in enumerate(corpus):
        hook = {"RETURN_URL_HOOK": lambda r, c, t=target: t}
        plain = {"RETURN_URL": target.replace("{", "{{").replace("}", "}}")}
        for extra in (hook, plain):
            with override_settings(PAYCHARGE={**settings.PAYCHARGE, **extra}):
                damage["off_site_redirects"] += lands_off_site(next_url(request, charge))
        if i % 10 == 0:  # the whole view too, with the target also in the query
            through_view += 1
            response = client.get(
                "/payments/return/",
                {"serviceChargeId": str(charge.gateway_id), "next": target, "return_to": target},
            )
            assert response.status_code == 302
            damage["off_site_redirects"] += lands_off_site(response["Location"])
    with override_settings(PAYCHARGE={**settings.PAYCHARGE, "RETURN_URL": "/thanks/"}):
        assert next_url(request, charge) == "/thanks/"  # the setting is really read
    assert lands_off_site("//evil.example/") and lands_off_site("/\t/evil.example")
    reliability_record(
        "Return view: open redirects",
        "generated off-site URLs (//, backslashes, %2F, tabs/newlines, unicode slashes, "
        "userinfo @ tricks, javascript:/data:) from RETURN_URL, RETURN_URL_HOOK and the query",
        2 * len(corpus) + through_view,
        damage,
        note=f"{through_view} of them through the full view",
    )


def test_admin_escapes_stored_xss(admin_client, reliability_record):
    charges = []
    # PostgreSQL refuses NUL in text and JSON columns: that payload is the tag test's.
    for i, evil in enumerate(p for p in XSS if "\x00" not in p):
        charges.append(
            _charge(
                metadata={"note": evil, evil: i},
                descriptor=evil,
                merchant_transaction_id=evil,
                store_name=evil,
                merchant_name=evil,
                error={"code": 306, "message": evil, "detail": evil},
                status="failed" if i % 2 else evil[:32],
                raw={"x": evil},
            )
        )
    pages = [reverse("admin:django_paycharge_charge_changelist")]
    pages += [reverse("admin:django_paycharge_charge_change", args=[c.pk]) for c in charges]
    pages += [reverse("admin:django_paycharge_charge_changelist") + "?q=" + XSS[0]]
    damage = {"unescaped": 0}
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        damage["unescaped"] += unescaped(response.content.decode())
    reliability_record(
        "Admin: stored XSS",
        f"{len(XSS) - 1} payloads in metadata (keys and values), descriptor, error message, "
        "merchant transaction id, store/merchant names, status; charge list and detail pages",
        len(pages),
        damage,
        note="zero unescaped tags, event handlers or javascript: URLs",
    )


def test_the_detectors_catch_what_they_should():
    """The counters above can fail: each known-bad construct is one hit."""
    assert unescaped("<p><img src=x onerror=PWN()></p>") == 1
    assert unescaped('<a href=" javascript:PWN()">x</a>') == 1
    assert unescaped("<script>PWN()</script>") == 1
    assert unescaped('<script type="application/json">{"a": "</b>"}</script>') == 1
    assert unescaped('<input value="&lt;script&gt;PWN()&lt;/script&gt;">') == 0
    assert lands_off_site("//evil.example/") and lands_off_site("/\t/evil.example")
    assert lands_off_site("javascript:alert(1)") and not lands_off_site("/orders/7/")
