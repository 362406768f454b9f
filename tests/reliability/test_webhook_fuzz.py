"""Webhook fuzzing: random methods, headers, content types, encodings, sizes and bodies.

Invariants, for every request: no 5xx (the documented 503 is for a database
that cannot store the delivery, which never happens here, so it is counted as
damage too); without a valid token nothing is stored or processed; with one,
a POST is answered 2xx and its delivery is stored (new, or the stored one
for a repeat).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from django_paycharge import services
from django_paycharge.models import Charge, WebhookDelivery
from tests.hypothesis_profiles import examples

TOKEN = "whk-fuzz-token-7c1f0e93"  # a test value
EXAMPLES = examples(400)
MAX_BODY = 2048
URL = "/payments/webhook/"

METHODS = st.sampled_from(["POST"] * 6 + ["GET", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
_GOOD = st.sampled_from([f"Bearer {TOKEN}", TOKEN, f"bearer   {TOKEN}  "])
_BAD = st.one_of(
    st.none(),
    st.just(f"Bearer {TOKEN}\x00"),
    st.just(f"Bearer {TOKEN[:-1]}"),
    st.just(f"Basic {TOKEN}"),
    st.just(f"Bearer {TOKEN.upper()}"),
    st.text(max_size=80).map(lambda t: f"Bearer {t}"),
    st.text(max_size=80),
)
AUTH = st.booleans().flatmap(lambda good: _GOOD if good else _BAD)  # half valid
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "application/json; charset=utf-16",
        "text/plain; charset=latin-1",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "application/octet-stream",
        "",
    ]
)
ENCODINGS = st.sampled_from(["utf-8", "utf-16", "utf-32", "latin-1", "shift_jis", "cp1252"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def bodies(draw: st.DrawFn, charge_ids: list[str]) -> bytes:
    kind = draw(st.sampled_from(["event", "json", "text", "bytes", "huge", "empty"]))
    if kind == "event":  # shaped like a gateway event, with random holes and lies
        data = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": st.sampled_from(charge_ids) | st.uuids().map(str) | JSON_VALUES,
                    "store_id": st.uuids().map(str) | JSON_VALUES,
                    "status": st.sampled_from(["successful", "failed", "awaiting"]) | st.text(),
                },
            )
        )
        event: dict[str, Any] = {
            "event": draw(
                st.sampled_from(["charge_finished", "charge_updated", "token_created"]) | st.text()
            ),
            "data": data,
        }
        if draw(st.booleans()):
            event["id"] = draw(st.text(max_size=70) | st.integers() | st.uuids().map(str))
        text = json.dumps(event, ensure_ascii=draw(st.booleans()))
        return text.encode(draw(ENCODINGS), errors="replace")
    if kind == "json":
        return json.dumps(draw(JSON_VALUES)).encode(draw(ENCODINGS), errors="replace")
    if kind == "text":
        return draw(st.text(max_size=300)).encode(draw(ENCODINGS), errors="replace")
    if kind == "bytes":
        return draw(st.binary(max_size=600))
    if kind == "huge":
        return draw(st.binary(min_size=1, max_size=16)) * draw(st.integers(MAX_BODY // 8, MAX_BODY))
    return b""


@pytest.mark.django_db
def test_fuzzed_webhook_requests(fake_gateway, settings, reliability_record):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
        "WEBHOOK_MAX_BODY_BYTES": MAX_BODY,
    }
    charge_ids = []
    for payment_type in ("card", "konbini", "bank_transfer"):
        token = fake_gateway.create_transaction_token(payment_type)["id"]
        charge = services.create_charge(transaction_token_id=token, amount=900, currency="JPY")
        charge_ids.append(str(charge.gateway_id))
    fake_gateway.complete(charge_ids[1])
    client = Client(raise_request_exception=False)
    damage = {
        "5xx": 0,
        "stored_without_token": 0,
        "charges_changed_without_token": 0,
        "authenticated_not_2xx": 0,
        "authenticated_not_stored": 0,
    }
    seen = {"cases": 0, "authenticated": 0, "stored": 0, "duplicates": 0}

    def mirror() -> list[tuple[str, str | None]]:
        return list(Charge.objects.order_by("pk").values_list("raw_digest", "status"))

    @hsettings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(method=METHODS, auth=AUTH, content_type=CONTENT_TYPES, body=bodies(charge_ids))
    def one(method: str, auth: str | None, content_type: str, body: bytes) -> None:
        seen["cases"] += 1
        before_rows, before_mirror = WebhookDelivery.objects.count(), mirror()
        headers: dict[str, Any] = {"HTTP_AUTHORIZATION": auth} if auth is not None else {}
        response = client.generic(method, URL, data=body, content_type=content_type, **headers)
        status = response.status_code
        damage["5xx"] += status >= 500
        stored = WebhookDelivery.objects.count() - before_rows
        if method != "POST" or auth not in (f"Bearer {TOKEN}", TOKEN, f"bearer   {TOKEN}  "):
            damage["stored_without_token"] += stored != 0
            damage["charges_changed_without_token"] += mirror() != before_mirror
            return
        seen["authenticated"] += 1
        if not 200 <= status < 300:
            damage["authenticated_not_2xx"] += 1
            return
        duplicate = response.json()["duplicate"]
        seen["duplicates" if duplicate else "stored"] += 1
        if duplicate:
            damage["authenticated_not_stored"] += stored != 0
        else:
            latest = WebhookDelivery.objects.order_by("-pk").first()
            text = body[:MAX_BODY].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
            damage["authenticated_not_stored"] += (
                stored != 1 or latest is None or latest.body != text
            )

    one()
    assert seen["authenticated"] > EXAMPLES // 10 and seen["stored"] > 0, seen
    reliability_record(
        "Webhook fuzzing (hypothesis)",
        "random methods, Authorization headers, content types, encodings, sizes (up to 16x "
        "the 2 KiB limit) and bodies (gateway-shaped events with holes and lies, JSON, text, "
        "bytes)",
        seen["cases"],
        damage,
        note=(
            f"{seen['authenticated']} authenticated POSTs: {seen['stored']} stored, "
            f"{seen['duplicates']} repeats answered as duplicates"
        ),
    )
