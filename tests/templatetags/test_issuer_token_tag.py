from __future__ import annotations

import html
import json
import re
import uuid

import pytest
from django.template import Context, Template
from django.utils import timezone

from django_paycharge.models import Charge, IssuerToken

pytestmark = pytest.mark.django_db

HOSTILE = [
    '"><script>alert(1)</script>',
    'it\'s "quoted"',
    "</script><b>x</b>",
    "日本語 ✓",
    "&amp;",
]


def make_token(**fields):
    now = timezone.now()
    charge = Charge.objects.create(
        gateway_id=uuid.uuid4(),
        store_id=uuid.uuid4(),
        transaction_token_id=uuid.uuid4(),
        requested_amount=1000,
        requested_currency="JPY",
        status="awaiting",
        mode="test",
        created_on=now,
        synced_at=now,
        first_seen_at=now,
        payment_type="online",
    )
    defaults = {
        "payment_type": "online",
        "call_method": "http_post",
        "issuer_token": "https://provider.example/pay",
        "payload": {"a": "1"},
        "fetched_at": now,
    }
    return IssuerToken.objects.create(charge=charge, **{**defaults, **fields})


def render(token, extra="", **context):
    template = Template("{% load paycharge %}{% paycharge_issuer_token token " + extra + " %}")
    return template.render(Context({"token": token, **context}))


def hidden_inputs(text):
    return [
        (html.unescape(n), html.unescape(v))
        for n, v in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', text)
    ]


def test_http_post_renders_an_auto_submitting_form_with_one_input_per_field():
    token = make_token(payload={"merchant": "M1", "amount": 1000, "ok": True})
    out = render(token)
    assert '<form method="post" action="https://provider.example/pay"' in out
    assert 'enctype="application/x-www-form-urlencoded"' in out
    assert hidden_inputs(out) == [("merchant", "M1"), ("amount", "1000"), ("ok", "true")]
    assert "<noscript>" in out and '<button type="submit"' in out
    assert "HTMLFormElement.prototype.submit.call" in out


def test_nested_payload_values_are_sent_as_json():
    token = make_token(payload={"items": [{"sku": "A", "qty": 2}], "meta": {"k": "v"}})
    fields = dict(hidden_inputs(render(token)))
    assert json.loads(fields["items"]) == [{"sku": "A", "qty": 2}]
    assert json.loads(fields["meta"]) == {"k": "v"}


@pytest.mark.parametrize("evil", HOSTILE)
def test_hostile_payload_keys_and_values_are_escaped(evil):
    token = make_token(payload={evil: evil, "x": evil})
    out = render(token)
    assert "<script>alert" not in out
    assert "</script><b>" not in out
    assert hidden_inputs(out) == [(evil, evil), ("x", evil)]
    assert out.count("<script") == 1  # only ours


def test_the_nonce_is_taken_from_the_context_or_passed_in():
    token = make_token()
    assert '<script nonce="n0nce">' in render(token, csp_nonce="n0nce")
    assert '<script nonce="given">' in render(token, 'nonce="given"', csp_nonce="other")
    assert "<script>" in render(token)


def test_a_hostile_nonce_is_escaped():
    out = render(make_token(), csp_nonce='"><script>x</script>')
    assert '<script nonce="&quot;&gt;&lt;script&gt;x&lt;/script&gt;">' in out


def test_http_get_navigates_to_the_url_with_the_payload_in_the_query():
    token = make_token(
        call_method="http_get", issuer_token="https://p.example/go?s=1", payload={"t": "a b&c"}
    )
    out = render(token)
    assert '<a href="https://p.example/go?s=1&amp;t=a+b%26c"' in out
    assert "window.location.assign" in out
    assert "<form" not in out


@pytest.mark.parametrize("method", ["sdk", "web", "app", "brand_new_method"])
def test_sdk_web_app_render_a_json_block_and_no_form(method):
    token = make_token(
        call_method=method, issuer_token="opaque-token-</script>", payload={"k": "<v>"}
    )
    out = render(token)
    assert "<form" not in out
    match = re.search(
        r'<script id="paycharge-issuer-token" type="application/json">(.*?)</script>', out, re.S
    )
    assert match, out
    assert json.loads(match.group(1)) == {
        "issuer_token": "opaque-token-</script>",
        "payload": {"k": "<v>"},
        "call_method": method,
    }


def test_bank_transfer_shows_the_account_to_transfer_to():
    token = make_token(
        payment_type="bank_transfer",
        call_method="",
        issuer_token="",
        payload=None,
        account_id="Fake Bank",
        branch_code="001",
        branch_name="Main <b>",
        account_holder_name="SHOP K.K.",
        account_number="1234567",
    )
    out = render(token)
    assert "1234567" in out
    assert "Main &lt;b&gt;" in out
    assert "<form" not in out


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "http://provider.example/pay",
        "//provider.example/pay",
        "/relative/path",
        "data:text/html,hi",
        " https://provider.example/pay",
        "https://",
        "JAVASCRIPT:alert(1)",
        "ftp://provider.example/",
    ],
)
def test_refused_action_urls_render_a_notice_and_no_form(url):
    out = render(make_token(issuer_token=url))
    assert "<form" not in out
    assert "<script" not in out
    assert "paycharge-error" in out


def test_plain_http_is_allowed_only_with_the_setting(settings, caplog):
    token = make_token(issuer_token="http://127.0.0.1:8001/_fake/provider/x")
    assert "<form" not in render(token)
    # The log says which setting a shop testing against the fake gateway is missing.
    assert 'plain http, which needs PAYCHARGE["ALLOW_HTTP_ISSUER_URLS"] = True' in caplog.text
    assert "/_fake/provider/x" not in caplog.text
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ALLOW_HTTP_ISSUER_URLS": True}
    assert '<form method="post" action="http://127.0.0.1:8001/_fake/provider/x"' in render(token)


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        (None, "JPY", "unknown"),
        (None, None, "unknown"),
        (123456, None, "123,456 (currency unknown)"),
        (123456, "", "123,456 (currency unknown)"),
    ],
)
def test_amount_filter_says_what_is_unknown(amount, currency, shown):
    from django_paycharge.templatetags.paycharge import paycharge_amount

    assert paycharge_amount(amount, currency) == shown
