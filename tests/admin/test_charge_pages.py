from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_paycharge.models import Charge, IssuerToken, WebhookDelivery
from django_paycharge.money import format_money

from .conftest import charge_row

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_paycharge_charge_changelist")


def change_url(charge):
    return reverse("admin:django_paycharge_charge_change", args=[charge.pk])


def listed(response):
    return {c.pk for c in response.context["cl"].result_list}


def test_changelist_shows_the_columns(admin_client, make_charge):
    make_charge(
        status="failed",
        requested_amount=1234,
        requested_currency="USD",
        mode="test",
        merchant_transaction_id="order-usd",
    )
    make_charge(status="successful", requested_amount=1500, requested_currency="JPY", mode="live")
    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    html = response.content.decode()
    assert "$12.34" in html  # the reader's locale (English here), through Babel
    assert "¥1,500" in html
    assert "paycharge-status-failed" in html and "paycharge-status-successful" in html
    assert html.count("paycharge-test") == 1  # only the test-mode row is marked
    assert "order-usd" in html
    assert "Fake Store" in html
    assert "Sync now" in html


@pytest.mark.parametrize(
    ("query", "field", "value", "other"),
    [
        ("status__exact=failed", "status", "failed", "successful"),
        ("mode__exact=live", "mode", "live", "test"),
        ("currency=USD", "requested_currency", "USD", "JPY"),
        ("account=shop2", "account", "shop2", "default"),
        ("payment_type__exact=online", "payment_type", "online", "card"),
        (
            "store=33333333-3333-4333-8333-333333333333",
            "store_id",
            uuid.UUID("33333333-3333-4333-8333-333333333333"),
            uuid.UUID("11111111-1111-4111-8111-111111111111"),
        ),
    ],
)
def test_each_filter(admin_client, make_charge, query, field, value, other):
    wanted = make_charge(**{field: value})
    make_charge(**{field: other})
    response = admin_client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    assert listed(response) == {wanted.pk}


def test_date_filter(admin_client, make_charge):
    recent = make_charge(created_on=timezone.now())
    make_charge(created_on=timezone.now() - timedelta(days=40))
    since = timezone.now() - timedelta(days=7)
    response = admin_client.get(CHANGELIST, {"created_on__gte": since.isoformat()})
    assert listed(response) == {recent.pk}


def test_store_filter_offers_the_configured_store_with_its_name(admin_client, make_charge):
    make_charge(store_name="Main Street Shop")
    response = admin_client.get(CHANGELIST)
    assert "Main Street Shop (default)" in response.content.decode()


@pytest.mark.parametrize("which", ["gateway_id", "transaction_token_id", "merchant_transaction_id"])
def test_search_matches_exactly(admin_client, make_charge, which):
    wanted = make_charge()
    make_charge()
    response = admin_client.get(CHANGELIST, {"q": str(getattr(wanted, which))})
    assert listed(response) == {wanted.pk}


def test_search_does_not_match_parts(admin_client, make_charge):
    make_charge(merchant_transaction_id="order-12345")
    response = admin_client.get(CHANGELIST, {"q": "order-123"})
    assert listed(response) == set()


def test_search_sql_uses_equality_not_like(admin_client, make_charge):
    make_charge()
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(CHANGELIST, {"q": str(uuid.uuid4())})
    sql = " ".join(q["sql"] for q in queries.captured_queries if "paycharge_charge" in q["sql"])
    assert "LIKE" not in sql.upper()


def _analyze():
    """PostgreSQL: the planner's figures of now, not those an earlier test's ANALYZE left
    (they outlive its rolled-back rows) that autovacuum may change at any moment."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE django_paycharge_charge")


def _changelist_queries(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(CHANGELIST)
    assert response.status_code == 200
    return len(queries.captured_queries), response


def test_changelist_query_count_does_not_grow_with_rows(admin_client):
    def add(n):
        rows = [charge_row() for _ in range(n)]
        Charge.objects.bulk_create(rows)
        saved = Charge.objects.filter(gateway_id__in=[r.gateway_id for r in rows[::3]])
        IssuerToken.objects.bulk_create(
            IssuerToken(
                charge=c, payment_type="online", call_method="http_post", fetched_at=timezone.now()
            )
            for c in saved
        )

    add(10)
    _analyze()
    at_10, response = _changelist_queries(admin_client)
    assert len(response.context["cl"].result_list) == 10
    add(990)
    _analyze()
    at_1000, response = _changelist_queries(admin_client)
    assert response.context["cl"].result_count == 1000
    assert "http_post" in response.content.decode()  # the issuer-token column is filled
    assert at_10 == at_1000


def test_changelist_reads_only_the_listed_columns(admin_client, make_charge):
    make_charge(raw={"big": "x" * 1000})
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(CHANGELIST)
    listing = [
        q["sql"]
        for q in queries.captured_queries
        if '"django_paycharge_charge"."gateway_id"' in q["sql"]
    ]
    assert listing
    assert '"django_paycharge_charge"."raw"' not in listing[0]


def test_detail_page_shows_every_field_read_only(admin_client, make_charge):
    charge = make_charge(
        status="failed",
        error={"code": 330, "message": "insufficient funds", "detail": "balance too low"},
        metadata={"order": {"id": 7, "items": ["a", "b"]}},
        charged_amount=999,
        charged_currency="USD",
        fee_amount=36,
        fee_currency="USD",
        descriptor="SHOP*ORDER",
        raw={"id": "raw-marker-123"},
    )
    response = admin_client.get(change_url(charge))
    assert response.status_code == 200
    html = response.content.decode()
    assert "source of truth" in html
    assert "330: insufficient funds" in html
    assert "<details>" in html and "raw-marker-123" in html
    assert "&quot;items&quot;: [" in html  # indented JSON
    assert "$9.99" in html and "$0.36" in html
    assert "SHOP*ORDER" in html
    assert 'name="_save"' not in html  # read-only: no save button
    for field in (
        "transaction_token_id",
        "subscription_id",
        "capture_at",
        "synced_at",
        "first_seen_at",
        "descriptor_phone_number",
        "only_direct_currency",
    ):
        assert f"field-{field}" in html, field
    assert "Refresh from gateway" in html


def test_unknown_error_codes_are_shown_as_they_are(admin_client, make_charge, settings):
    charge = make_charge(status="failed", error={"code": 999, "message": "odd"})
    html = admin_client.get(change_url(charge)).content.decode()
    assert "<strong>Code</strong> 999</p>" in html
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ADMIN_ERROR_CODES": {999: "shop-defined meaning"}}
    assert "999: shop-defined meaning" in admin_client.get(change_url(charge)).content.decode()


def test_hostile_values_are_escaped(admin_client, make_charge):
    evil = '<script>alert("x")</script>'
    charge = make_charge(
        metadata={"note": evil, evil: 1},
        descriptor=evil,
        error={"code": evil, "message": evil},
        merchant_transaction_id=evil,
        store_name=evil,
        status=evil,
        raw={"x": evil},
    )
    for url in (CHANGELIST, change_url(charge)):
        html = admin_client.get(url).content.decode()
        assert evil not in html, url
        assert "&lt;script&gt;" in html, url


def test_issuer_token_inline_masks_the_account_number(client, make_charge, staff_user):
    charge = make_charge(payment_type="bank_transfer", status="awaiting")
    IssuerToken.objects.create(
        charge=charge,
        payment_type="bank_transfer",
        branch_name="Fake Branch",
        account_number="1234567",
        fetched_at=timezone.now(),
    )
    client.force_login(staff_user("view_charge"))
    html = client.get(change_url(charge)).content.decode()
    assert "Fake Branch" in html
    assert "•••4567" in html and "1234567" not in html
    client.force_login(staff_user("view_charge", "view_bank_account_number"))
    assert "1234567" in client.get(change_url(charge)).content.decode()


def test_deliveries_inline(admin_client, make_charge):
    charge = make_charge()
    delivery = WebhookDelivery.objects.create(
        event="charge_finished",
        dedupe_key="id:d1",
        delivery_id="d1",
        body="{}",
        received_at=timezone.now(),
        status="processed",
        charge=charge,
    )
    html = admin_client.get(change_url(charge)).content.decode()
    assert reverse("admin:django_paycharge_webhookdelivery_change", args=[delivery.pk]) in html
    assert "charge_finished" in html


def test_no_add_no_delete_no_change(admin_client, make_charge):
    charge = make_charge(status="awaiting")
    assert admin_client.get(reverse("admin:django_paycharge_charge_add")).status_code == 403
    assert (
        admin_client.get(
            reverse("admin:django_paycharge_charge_delete", args=[charge.pk])
        ).status_code
        == 403
    )
    response = admin_client.post(change_url(charge), {"status": "successful"})
    assert response.status_code == 403
    charge.refresh_from_db()
    assert charge.status == "awaiting"
    html = admin_client.get(CHANGELIST).content.decode()
    assert "delete_selected" not in html


@pytest.mark.parametrize(
    ("term", "found"),
    [
        ("3f2a9c1e", {"wanted", "twin"}),  # what the list shows
        ("3f2a9c1e…", {"wanted", "twin"}),  # copied with the ellipsis
        ("3F2A9C1E-0000", {"wanted"}),  # with a dash, in capitals
        (" 3f2a9c1effff4fff ", {"twin"}),
    ],
)
def test_search_finds_charges_by_the_prefix_the_list_shows(admin_client, make_charge, term, found):
    charges = {
        "wanted": make_charge(gateway_id=uuid.UUID("3f2a9c1e-0000-4000-8000-000000000001")),
        "twin": make_charge(gateway_id=uuid.UUID("3f2a9c1e-ffff-4fff-bfff-ffffffffffff")),
        "after": make_charge(gateway_id=uuid.UUID("3f2a9c1f-0000-4000-8000-000000000000")),
        "before": make_charge(gateway_id=uuid.UUID("3f2a9c1d-ffff-4fff-bfff-ffffffffffff")),
    }
    response = admin_client.get(CHANGELIST, {"q": term})
    assert listed(response) == {charges[name].pk for name in found}


@pytest.mark.parametrize("term", ["3f2a9c1", "3f2a9c1g", "zzzzzzzz", "3f2a9c1e" * 5])
def test_search_ignores_short_or_non_hex_prefixes(admin_client, make_charge, term):
    make_charge(gateway_id=uuid.UUID("3f2a9c1e-0000-4000-8000-000000000001"))
    assert listed(admin_client.get(CHANGELIST, {"q": term})) == set()


def test_the_gateways_formatted_amounts_read_like_the_amounts(admin_client, make_charge):
    charge = make_charge(
        requested_amount=240_000,
        requested_currency="JPY",
        requested_amount_formatted=Decimal("240000.0000"),
        charged_amount=1999,
        charged_currency="USD",
        charged_amount_formatted=Decimal("19.9900"),
        fee_amount=None,
        fee_amount_formatted=Decimal("0.0050"),  # finer than a cent: shown as it is
        fee_currency="USD",
    )
    html = admin_client.get(change_url(charge)).content.decode()
    # The amount, and the gateway's formatted one beside it, alike.
    assert html.count(format_money(240_000, "JPY")) == 2
    # Charged, its formatted figure, and what is left to refund of it.
    assert html.count(format_money(1999, "USD")) == 3
    assert "0.0050 USD" in html
    assert "240000.0000" not in html and "19.9900" not in html


def test_the_order_url_hook_links_the_charge_to_the_shops_order(
    admin_client, make_charge, settings, caplog
):
    charge = make_charge(metadata={"order": 42})
    assert "paycharge-order-link" not in admin_client.get(change_url(charge)).content.decode()

    def hook(charge):
        return f"/shop/orders/{charge.metadata['order']}/"

    settings.PAYCHARGE = {**settings.PAYCHARGE, "ORDER_URL_HOOK": hook}
    html = admin_client.get(change_url(charge)).content.decode()
    assert '<a href="/shop/orders/42/" class="paycharge-order-link">Open the order</a>' in html

    settings.PAYCHARGE = {**settings.PAYCHARGE, "ORDER_URL_HOOK": lambda c: "javascript:alert(1)"}
    assert "javascript:" not in admin_client.get(change_url(charge)).content.decode()

    settings.PAYCHARGE = {**settings.PAYCHARGE, "ORDER_URL_HOOK": lambda c: c.metadata["x"]}
    response = admin_client.get(change_url(charge))
    assert response.status_code == 200  # a broken hook costs the link, not the page
    assert "ORDER_URL_HOOK failed" in caplog.text


@pytest.mark.parametrize("term", ["3f2a", "3F2A-9c1", "3f2a9c1…"])
def test_a_short_id_search_says_how_to_search_by_id(admin_client, make_charge, term):
    make_charge(gateway_id=uuid.UUID("3f2a9c1e-0000-4000-8000-000000000001"))
    response = admin_client.get(CHANGELIST, {"q": term})
    notices = [str(m) for m in response.context["messages"]]
    assert notices == [
        f"“{term}” was looked for as a merchant transaction id only: to search by charge id, "
        "give its first 8 characters or more (as the list shows them)."
    ]
    assert listed(response) == set()


@pytest.mark.parametrize("term", ["3f2a9c1e", "order-7", "ZZZZ"])
def test_other_searches_have_no_hint(admin_client, make_charge, term):
    make_charge(gateway_id=uuid.UUID("3f2a9c1e-0000-4000-8000-000000000001"))
    response = admin_client.get(CHANGELIST, {"q": term})
    assert [str(m) for m in response.context["messages"]] == []
