"""Real-shaped gateway answers with any field dropped, nulled, retyped or replaced.

Every mutated charge goes through the client (a read), ``refresh_charge`` (the
mirror), a webhook delivery naming it, the admin's change and list pages and
the API; pages of mutated charges, some without a usable id, go through
``sync_charges``. Nothing may crash, every charge with an id must be stored
with ``raw`` equal to what was sent, and every other item must be quarantined.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
import responses
from django.urls import reverse
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from django_paycharge import services
from django_paycharge.client import Charge as RemoteCharge
from django_paycharge.models import Charge, QuarantinedItem, WebhookConfiguration, WebhookDelivery
from django_paycharge.services.mirror.quarantined import payload_text
from django_paycharge.services.webhooks import deliveries
from tests.hypothesis_profiles import examples

from .real_shapes import CHARGE_SHAPES, STORE, WEBHOOK_SHAPES

pytestmark = pytest.mark.django_db

BASE = "https://fake-gateway.paycharge.test"
EXAMPLES = examples(150)
#: The fields of a charge the client knows (the spec's and the gateway facts').
SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(RemoteCharge) if f.name not in ("id", "raw"))

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
#: Values the spec does not list, in the forms a gateway gets them wrong.
ODD = st.sampled_from(
    [
        "",
        "not-a-uuid",
        "11111111-1111-4111-8111-11111111111",
        "yesterday",
        "2024-13-45T00:00:00Z",
        "0001-01-01T00:00:00+14:00",
        "1000",
        "1000.5",
        "1e400",
        "true",
        "live_test",
        "refunded",
        "x" * 300,
        "日本円",
        "jpy",
        "a\x00b",
        "-0",
    ]
) | st.text(max_size=300)


@st.composite
def mutate(draw: st.DrawFn, value: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``value`` with some of ``keys`` dropped, nulled, retyped or replaced (nested too)."""
    for key in draw(st.lists(st.sampled_from(keys), unique=True, max_size=6)):
        operation = draw(st.sampled_from(("drop", "null", "retype", "odd", "nested")))
        if operation == "drop":
            value.pop(key, None)
        elif operation == "null":
            value[key] = None
        elif operation == "retype":
            value[key] = draw(VALUES)
        elif operation == "odd":
            value[key] = draw(ODD)
        elif isinstance(value.get(key), dict) and value[key]:
            inner = tuple(value[key])
            value[key] = draw(mutate(dict(value[key]), inner))
        else:
            value[key] = draw(st.dictionaries(st.sampled_from(("code", "mode", "x")), VALUES))
    return value


@st.composite
def charges(draw: st.DrawFn) -> dict[str, Any]:
    payload = copy.deepcopy(draw(st.sampled_from(CHARGE_SHAPES)))
    # A fresh id each time: hypothesis repeats drawn values, and a second payload under
    # one id is rightly not stored when its status ranks lower (a stale read).
    payload["id"] = str(uuid.uuid4())
    extra = tuple(k for k in payload if k not in SPEC_FIELDS and k != "id")
    return draw(mutate(payload, SPEC_FIELDS + extra))


def _without(name: str) -> dict[str, Any]:
    payload = copy.deepcopy(CHARGE_SHAPES[0])
    payload.pop(name, None)
    payload["id"] = str(uuid.uuid4())
    return payload


def _wire(payload: Any) -> str:
    return json.dumps(payload)


def _as_received(text: str) -> Any:
    """What the client decodes: fractions as Decimal, as the transport does."""
    return json.loads(text, parse_float=Decimal)


def _as_stored(text: str) -> Any:
    """The payload as the mirror must keep it: every JSON number as its exact decimal value.

    PostgreSQL's ``jsonb`` writes ``5.2e+16`` back as ``52000000000000000`` (the same
    number); compared as decimals, nothing is lost. The one documented exception: a
    NUL is stored as U+FFFD, on every database, since PostgreSQL cannot hold it.
    """
    return _exact(text.replace("\\u0000", "\\ufffd"))


def _exact(text: str) -> Any:
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def _stored(raw: Any) -> Any:
    return _exact(json.dumps(raw))


class Gateway:
    """Answers reads of any charge with the payload last given for its id; tokens are 404."""

    def __init__(self, rsps: responses.RequestsMock) -> None:
        self.charges: dict[str, str] = {}
        self.page: list[Any] = []
        one = re.compile(rf"^{re.escape(BASE)}/stores/[^/]+/charges/([^/?]+)")
        rsps.add_callback(responses.GET, one, callback=self._one)
        rsps.add_callback(
            responses.GET,
            re.compile(rf"^{re.escape(BASE)}(/stores/[^/]+)?/charges(\?|$)"),
            self._list,
        )
        rsps.add(
            responses.GET,
            re.compile(rf"^{re.escape(BASE)}/stores/[^/]+/tokens/"),
            status=404,
            json={},
        )

    def _one(self, request: Any) -> tuple[int, dict[str, str], str]:
        charge_id = request.path_url.split("/charges/")[1].split("?")[0]
        body = self.charges.get(charge_id)
        if body is None:
            return 404, {}, json.dumps({"status": "error", "code": "NOT_FOUND", "errors": []})
        return 200, {}, body

    def _list(self, request: Any) -> tuple[int, dict[str, str], str]:
        return 200, {}, json.dumps({"items": self.page, "has_more": False})


@pytest.fixture
def gateway(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": BASE, "MAX_RETRIES": 0}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield Gateway(rsps)


def test_mutated_charges_through_every_reader(gateway, admin_client, reliability_record):
    damage = {"crashes": 0, "raw_differs": 0, "not_stored": 0, "delivery_failed": 0, "page_5xx": 0}
    seen = {"cases": 0, "stored": 0, "unknown_status": 0, "unknown_created_on": 0}
    changelist = reverse("admin:django_paycharge_charge_changelist")

    @hsettings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    # A real shape without its status and without its creation time, whatever the draws
    # of a leg's profile (a quarter of the examples drew neither on one leg).
    @example(payload=_without("status"))
    @example(payload=_without("created_on"))
    @given(payload=charges())
    def one(payload: dict[str, Any]) -> None:
        seen["cases"] += 1
        text = _wire(payload)
        gateway.charges[payload["id"]] = text
        received = _as_received(text)
        try:
            remote = services.get_client().charges.retrieve(STORE, payload["id"])
            assert isinstance(remote, RemoteCharge) and remote.raw == received
            stored = services.refresh_charge(payload["id"])
        except Exception:
            damage["crashes"] += 1
            raise
        row = Charge.objects.filter(gateway_id=payload["id"]).first()
        damage["not_stored"] += row is None
        if row is None:
            return
        seen["stored"] += 1
        seen["unknown_status"] += row.status is None
        seen["unknown_created_on"] += row.created_on is None
        damage["raw_differs"] += _stored(row.raw) != _as_stored(text)
        for url in (
            reverse("admin:django_paycharge_charge_change", args=[row.pk]),
            f"{changelist}?q={payload['id']}",
            f"/api/payments/charges/{payload['id']}/",
        ):
            damage["page_5xx"] += admin_client.get(url).status_code >= 500
        body = json.dumps({"event": "charge_finished", "data": payload})
        delivery = WebhookDelivery.objects.create(
            event="charge_finished",
            dedupe_key=uuid.uuid4().hex,
            body=body,
            received_at=stored.synced_at,
        )
        damage["delivery_failed"] += deliveries.process_delivery(delivery.pk) != "processed"

    one()
    # The unmutated shapes and the mutations both ran: unknowns were really stored.
    assert seen["unknown_status"] and seen["unknown_created_on"], seen
    assert admin_client.get(changelist).status_code == 200
    for name in ("payment_type", "status", "mode"):
        assert admin_client.get(f"{changelist}?{name}__exact=x").status_code < 500
    reliability_record(
        "Mutated charges (hypothesis)",
        "real-shaped charges from the official SDKs' recorded answers with any field dropped, "
        "nulled, retyped or replaced (nested too): client read, refresh, webhook delivery, "
        "admin change and list pages, API detail",
        seen["cases"],
        damage,
        note=(
            f"{seen['stored']} of {seen['cases']} stored with raw as sent; "
            f"{seen['unknown_status']} with an unknown status, "
            f"{seen['unknown_created_on']} with an unknown creation time"
        ),
    )


@st.composite
def pages(draw: st.DrawFn) -> list[Any]:
    items: list[Any] = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        item: Any = draw(charges())  # spoiled below, into anything
        spoil = draw(st.sampled_from(("keep",) * 4 + ("drop", "null", "odd", "scalar")))
        if spoil == "drop":
            del item["id"]
        elif spoil == "null":
            item["id"] = None
        elif spoil == "odd":
            item["id"] = draw(ODD | VALUES)
        elif spoil == "scalar":
            item = draw(VALUES)
        items.append(item)
    return items


def _usable_id(item: Any) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    try:
        return str(uuid.UUID(item["id"]))
    except ValueError:
        return None


def test_mutated_pages_through_the_sync(gateway, admin_client, reliability_record):
    damage = {"crashes": 0, "lost_items": 0, "raw_differs": 0, "quarantine_page_5xx": 0}
    seen = {"cases": 0, "items": 0, "stored": 0, "quarantined": 0}

    @hsettings(
        max_examples=EXAMPLES // 3,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(items=pages())
    def one(items: list[Any]) -> None:
        seen["cases"] += 1
        seen["items"] += len(items)
        gateway.page = items
        for item in items:
            if _usable_id(item):
                gateway.charges[_usable_id(item)] = _wire(item)
        try:
            result = services.sync_charges(full=True)
        except Exception:
            damage["crashes"] += 1
            raise
        ids = {u for u in map(_usable_id, items) if u is not None}
        rows = {str(r.gateway_id): r for r in Charge.objects.filter(gateway_id__in=ids)}
        unusable = [i for i in items if _usable_id(i) is None]
        kept = set(
            QuarantinedItem.objects.filter(
                payload_digest__in=[_digest(i) for i in unusable]
            ).values_list("payload_digest", flat=True)
        )
        seen["stored"] += len(rows)
        seen["quarantined"] += len(unusable)
        # Every item is a row or a quarantined payload (a repeat is counted on its row).
        damage["lost_items"] += len(ids - set(rows)) + sum(_digest(i) not in kept for i in unusable)
        # The run's count is of distinct payloads still kept (one row per payload).
        damage["lost_items"] += result.quarantined < len({_digest(i) for i in unusable})
        last = {_usable_id(i): i for i in items if _usable_id(i)}
        damage["raw_differs"] += sum(
            _stored(rows[i].raw) != _as_stored(_wire(last[i])) for i in rows
        )

    one()
    url = reverse("admin:django_paycharge_quarantineditem_changelist")
    damage["quarantine_page_5xx"] += admin_client.get(url).status_code >= 500
    item = QuarantinedItem.objects.first()
    if item is not None:
        change = reverse("admin:django_paycharge_quarantineditem_change", args=[item.pk])
        damage["quarantine_page_5xx"] += admin_client.get(change).status_code >= 500
    assert seen["quarantined"] > 0 and seen["stored"] > 0, seen
    reliability_record(
        "Mutated list pages and quarantine (hypothesis)",
        "pages of 1-12 mutated real-shaped charges, a third without a usable id (missing, "
        "null, not a UUID, not an object), through sync_charges",
        seen["cases"],
        damage,
        note=(
            f"{seen['items']} items: {seen['stored']} stored, {seen['quarantined']} "
            "quarantined with payload and reason; the rest of each page stored"
        ),
    )


def _digest(item: Any) -> str:
    """The digest the quarantine keys an item by: of the item as the client decoded it."""
    return hashlib.sha256(payload_text(_as_received(_wire(item))).encode()).hexdigest()


@st.composite
def webhooks(draw: st.DrawFn) -> dict[str, Any]:
    payload = copy.deepcopy(draw(st.sampled_from(WEBHOOK_SHAPES)))
    payload["id"] = str(uuid.uuid4())
    keys = ("platform_id", "merchant_id", "store_id", "triggers", "url", "active", "created_on")
    return draw(mutate(payload, (*keys, "updated_on", "is_integration", "auth_token")))


def test_mutated_webhook_configurations(settings, admin_client, reliability_record):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": BASE, "MAX_RETRIES": 0}
    damage = {"crashes": 0, "raw_differs": 0, "unknown_shown_inactive": 0, "page_5xx": 0}
    seen = {"cases": 0, "without_active": 0}
    url = re.compile(rf"^{re.escape(BASE)}/.*webhooks")

    @hsettings(
        max_examples=EXAMPLES // 2,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(payload=webhooks())
    def one(payload: dict[str, Any]) -> None:
        seen["cases"] += 1
        with responses.RequestsMock() as rsps:
            rsps.get(url, body=json.dumps({"items": [payload], "has_more": False}))
            try:
                services.sync_webhooks(store_id=STORE)
            except Exception:
                damage["crashes"] += 1
                raise
        row = WebhookConfiguration.objects.get(gateway_id=payload["id"])
        expected = {k: v for k, v in payload.items() if k != "auth_token"}
        damage["raw_differs"] += _stored(row.raw) != _as_stored(json.dumps(expected))
        if not isinstance(payload.get("active"), bool) and payload.get("active") not in (
            "true",
            "false",
        ):
            seen["without_active"] += 1
            damage["unknown_shown_inactive"] += row.active is not None
        change = reverse("admin:django_paycharge_webhookconfiguration_change", args=[row.pk])
        damage["page_5xx"] += admin_client.get(change).status_code >= 500

    one()
    changelist = reverse("admin:django_paycharge_webhookconfiguration_changelist")
    damage["page_5xx"] += admin_client.get(changelist).status_code >= 500
    reliability_record(
        "Mutated webhook configurations (hypothesis)",
        "real-shaped webhook configurations (the SDKs' fixtures, some without active) with "
        "any field dropped, nulled, retyped or replaced, through sync_webhooks and the admin",
        seen["cases"],
        damage,
        note=f"{seen['without_active']} without a readable active flag, mirrored as unknown",
    )
