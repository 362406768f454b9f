"""Where the money is: refunded and partially refunded charges in the list, the filter, the
page and the CSV; one money format throughout."""

from __future__ import annotations

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from django_paycharge import services
from django_paycharge.models import ChargeActionRequest

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:django_paycharge_charge_changelist")
EXPORT = reverse("admin:django_paycharge_charge_export")


@pytest.fixture
def three(fake_gateway, gateway_charge):
    """A charge refunded in full, one refunded in part, one not refunded (¥1,500 each)."""
    whole, half, none = gateway_charge("card"), gateway_charge("card"), gateway_charge("card")
    services.refund_charge(whole)
    services.refund_charge(half, amount=700)
    for refunded in (whole, half):  # their ends, as the refund_finished webhooks tell them
        services.sync_charge_children(refunded)
    return {"whole": whole, "half": half, "none": none}


def listed(response):
    return {c.gateway_id for c in response.context["cl"].result_list}


def test_the_list_shows_refunded_and_partially_refunded_beside_the_status(admin_client, three):
    html = admin_client.get(CHANGELIST).content.decode()
    rows = {
        key: html.split(f'data-charge-id="{charge.gateway_id}"', 1)[1].split("</tr>", 1)[0]
        for key, charge in three.items()
    }
    assert "Successful" in rows["whole"] and "paycharge-refund-refunded" in rows["whole"]
    assert ">Refunded</span>" in rows["whole"]
    assert ">Partially refunded</span>" in rows["half"]
    assert "paycharge-refund-" not in rows["none"]


def test_the_refund_filter(admin_client, three):
    html = admin_client.get(CHANGELIST).content.decode()
    assert "?refunds=refunded" in html and "?refunds=partially_refunded" in html
    assert listed(admin_client.get(CHANGELIST, {"refunds": "refunded"})) == {
        three["whole"].gateway_id
    }
    assert listed(admin_client.get(CHANGELIST, {"refunds": "partially_refunded"})) == {
        three["half"].gateway_id
    }
    assert listed(admin_client.get(CHANGELIST, {"refunds": "none"})) == {three["none"].gateway_id}


def test_the_list_costs_the_same_queries_with_refunds(admin_client, fake_gateway, gateway_charge):
    gateway_charge("card")
    with CaptureQueriesContext(connection) as few:
        admin_client.get(CHANGELIST)
    for n in range(4):
        charge = gateway_charge("card")
        services.refund_charge(charge, amount=100 + n)
    with CaptureQueriesContext(connection) as more:
        admin_client.get(CHANGELIST)
    assert len(more) == len(few)


def test_the_charge_page_says_so_with_the_amounts(admin_client, three):
    url = reverse("admin:django_paycharge_charge_change", args=[three["half"].pk])
    html = admin_client.get(url).content.decode()
    assert ">Partially refunded</span>" in html
    assert "¥700" in html and "¥800" in html  # refunded, left to refund


def test_the_csv_says_where_the_money_is(admin_client, three, fake_gateway):
    # A refund asked for and not confirmed yet counts against what is left (the service's rule).
    ChargeActionRequest.objects.create(
        kind="refund", idempotency_key="pending-1", charge=three["none"], params={"amount": 200}
    )
    response = admin_client.get(EXPORT)
    text = b"".join(response.streaming_content).decode("utf-8")[1:]
    rows = {r["charge_id"]: r for r in csv.DictReader(io.StringIO(text))}
    whole, half, none = (rows[str(three[k].gateway_id)] for k in ("whole", "half", "none"))
    columns = ("refund_state", "refunded_amount", "refunded_decimal", "left_to_refund")
    assert [whole[c] for c in columns] == ["refunded", "1500", "1500", "0"]
    assert [half[c] for c in columns] == ["partially_refunded", "700", "700", "800"]
    assert [none[c] for c in columns] == ["", "0", "0", "1300"]
    for key in three:
        assert rows[str(three[key].gateway_id)]["left_to_refund"] == str(
            services.refundable_amount(three[key])
        )


def test_every_amount_of_the_charge_pages_reads_the_same_way(admin_client, three):
    """One format: ¥1,500 (English) / ￥1,500 (Japanese), never "1,500 JPY" or a bare 1500."""
    half = three["half"]
    pages = [
        reverse("admin:django_paycharge_charge_change", args=[half.pk]),
        reverse("admin:django_paycharge_refund_changelist"),
        reverse("admin:django_paycharge_chargeactionrequest_changelist"),
    ]
    for language, yen in (("en", "¥"), ("ja", "￥")):
        with translation.override(language):
            for url in pages:
                html = admin_client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
                assert "JPY</td>" not in html and " JPY<" not in html, url
                assert f"{yen}700" in html, (language, url)


def test_the_refund_page_shows_the_gateways_figure_in_the_same_format(admin_client, three):
    refund = three["half"].refunds.get()
    refund.amount_formatted = "700.0000"
    refund.save(update_fields=["amount_formatted"])
    url = reverse("admin:django_paycharge_refund_change", args=[refund.pk])
    html = admin_client.get(url).content.decode()
    assert html.count("¥700") >= 2 and "700.0000" not in html
