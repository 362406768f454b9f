"""The staff dashboard: hand-counted figures, time zones, queries, access, the reader's locale."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from django_paycharge.admin import dashboard_figures
from django_paycharge.models import (
    Announcement,
    ChargeActionRequest,
    ChargeRequest,
    OwnerProblem,
    QuarantinedItem,
    Refund,
    Subscription,
    SyncCheckpoint,
    WebhookDelivery,
)
from django_paycharge.services.problems import settings_digest

from .conftest import charge_row

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_owner_problems")]

#: 2026-03-09 15:30 UTC: 00:30 on the 10th in Tokyo, 08:30 on the 9th in Los Angeles (PDT).
NOW = datetime(2026, 3, 9, 15, 30, tzinfo=UTC)
URL = "/admin/django_paycharge/dashboard/"


def at(minutes_before_now: float) -> datetime:
    return NOW - timedelta(minutes=minutes_before_now)


DAY = 24 * 60


@pytest.fixture
def hand_counted():
    """Live charges whose figures are counted by hand in the tests below."""
    made = {}

    def add(name, **fields):
        charge = charge_row(mode="live", **fields)
        charge.save()
        made[name] = charge
        return charge

    add("a", requested_amount=1000, created_on=at(20))  # 00:10 JST the 10th, 08:10 PDT the 9th
    add("b", requested_amount=2500, created_on=at(40))  # 23:50 JST the 9th, 07:50 PDT the 9th
    add("c", payment_type="konbini", requested_amount=500, created_on=at(6 * DAY))
    add("d", requested_amount=1999, requested_currency="USD", created_on=at(30))
    # Charged differs from requested: the charged amount is what was taken.
    add(
        "e",
        requested_amount=3000,
        charged_amount=2800,
        charged_currency="JPY",
        created_on=at(8 * DAY),
    )
    add("f", requested_amount=9999, created_on=at(31 * DAY))  # before the 30 days
    add("g", status="failed", error={"code": 306, "message": "declined"}, created_on=at(10))
    add("h", status="failed", error={"code": 306}, created_on=at(10 * DAY))
    add("i", status="error", error=None, created_on=at(3 * DAY))
    add("j", status="failed", error={"code": 330}, created_on=at(2 * DAY))
    add(
        "k",
        status="awaiting",
        payment_type="bank_transfer",
        requested_amount=7000,
        capture_at=NOW + timedelta(days=1),
        created_on=at(60),
    )
    add(
        "l",
        status="awaiting",
        payment_type="konbini",
        requested_amount=1200,
        capture_at=None,
        created_on=at(90),
    )
    add("m", status="awaiting", payment_type="online", created_on=at(5))  # not listed: a wallet
    add("n", status="authorized", created_on=at(5))  # not taken yet
    charge_row(mode="test", requested_amount=5555, created_on=at(5)).save()  # never in live
    for name, amount, currency, status, minutes in (
        ("a", 700, "JPY", "successful", 10),
        ("b", 300, "JPY", "pending", 10),  # not given back yet
        ("d", 500, "USD", "successful", 9 * DAY),
    ):
        Refund.objects.create(
            gateway_id=uuid.uuid4(),
            charge=made[name],
            amount=amount,
            currency=currency,
            status=status,
            mode="live",
            created_on=at(minutes),
            synced_at=NOW,
            first_seen_at=NOW,
        )
    return made


def money(totals):
    return list(zip(totals.amounts, totals.counts, strict=True))


def test_figures_in_tokyo_are_the_hand_counted_ones(hand_counted):
    figures = dashboard_figures.compute("live", ZoneInfo("Asia/Tokyo"), now=NOW)
    assert str(figures.today) == "2026-03-10"
    # (amount, count) for today, 7 days, 30 days.
    assert money(figures.takings["JPY", "card"]) == [(1000, 1), (3500, 2), (6300, 3)]
    assert money(figures.takings["JPY", "konbini"]) == [(0, 0), (500, 1), (500, 1)]
    assert money(figures.currency_takings["JPY"]) == [(1000, 1), (4000, 3), (6800, 4)]
    assert money(figures.takings["USD", "card"]) == [(1999, 1), (1999, 1), (1999, 1)]
    assert set(figures.currency_takings) == {"JPY", "USD"}
    assert money(figures.refunds["JPY", "card"]) == [(700, 1), (700, 1), (700, 1)]
    assert money(figures.refunds["USD", "card"]) == [(0, 0), (0, 0), (500, 1)]
    failures = {key: totals.counts for key, totals in figures.failures.items()}
    assert failures == {
        ("failed", "306"): [1, 1, 2],
        ("failed", "330"): [0, 1, 1],
        ("error", ""): [0, 1, 1],
    }
    assert figures.daily_takings[-1] == {"JPY": 1000, "USD": 1999}
    assert figures.daily_takings[-2] == {"JPY": 2500}
    assert figures.daily_failures[-1] == 1 and sum(figures.daily_failures) == 4
    assert [c.merchant_transaction_id for c in figures.open_charges] == [
        hand_counted["k"].merchant_transaction_id,  # its deadline first
        hand_counted["l"].merchant_transaction_id,  # no deadline: last
    ]
    assert figures.open_count == 2
    assert figures.currencies == ["JPY", "USD"]


def test_today_is_the_shops_day_in_los_angeles(hand_counted):
    figures = dashboard_figures.compute("live", ZoneInfo("America/Los_Angeles"), now=NOW)
    assert str(figures.today) == "2026-03-09"
    # Both a (08:10) and b (07:50) fall on the 9th there; in Tokyo b was the day before.
    assert money(figures.takings["JPY", "card"])[0] == (3500, 2)
    assert figures.daily_takings[-1] == {"JPY": 3500, "USD": 1999}
    # The 30 days end on the 9th: f (31 days ago) is still out, e (8 days) in.
    assert money(figures.currency_takings["JPY"])[2] == (6800, 4)


def test_test_charges_are_counted_apart(hand_counted):
    figures = dashboard_figures.compute("test", ZoneInfo("UTC"), now=NOW)
    assert money(figures.currency_takings["JPY"])[0] == (5555, 1)
    assert figures.failures == {} and figures.open_count == 0


def test_a_day_is_midnight_to_midnight_across_a_change_of_clocks():
    # 2026-03-08 in Los Angeles has 23 hours (02:00 PST -> 03:00 PDT).
    la = ZoneInfo("America/Los_Angeles")
    for amount, created in ((1, (8, 0, 5)), (2, (8, 23, 55)), (4, (9, 0, 5))):
        when = datetime(2026, 3, *created, tzinfo=la)
        charge_row(mode="live", requested_amount=amount, created_on=when).save()
    figures = dashboard_figures.compute("live", la, now=NOW)
    assert figures.daily_takings[-2] == {"JPY": 3}
    assert figures.daily_takings[-1] == {"JPY": 4}


@pytest.fixture
def dashboard_client(staff_user):
    client = Client()
    client.force_login(staff_user("view_dashboard"))
    return client


def test_the_page_shows_the_figures_formatted_for_the_reader(
    dashboard_client, hand_counted, settings, monkeypatch
):
    settings.TIME_ZONE = "Asia/Tokyo"
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    page = dashboard_client.get(URL).content.decode()
    assert "¥6,800" in page and "$19.99" in page  # the 30 days' JPY total, the USD charge
    assert "306: card declined" in page
    assert "<svg" in page and "<script" not in page.split('id="paycharge-dashboard"')[1]
    assert page.count('class="paycharge-bar"') == 30
    assert "Asia/Tokyo" in page
    japanese = dashboard_client.get(URL, HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "￥6,800" in japanese  # Japanese writes the yen sign full-width
    assert "売上" in japanese and "要対応" in japanese


def test_a_currency_switch_redraws_the_chart(dashboard_client, hand_counted, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    usd = dashboard_client.get(URL, {"currency": "usd"}).content.decode()
    assert "Daily takings in USD" in usd
    assert re.search(r"<title>[^<]*: \$19\.99</title>", usd)


def test_a_constant_number_of_queries(dashboard_client, django_assert_num_queries, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    dashboard_client.get(URL)  # the session and the user, once
    counts = []
    for size in (3, 60):
        for n in range(size):
            status = ("successful", "failed", "awaiting")[n % 3]
            payment_type = ("card", "konbini", "bank_transfer")[n % 3]
            charge = charge_row(
                mode="live", status=status, payment_type=payment_type, created_on=at(n * 100)
            )
            charge.save()
            Refund.objects.create(
                gateway_id=uuid.uuid4(),
                charge=charge,
                amount=1,
                currency="JPY",
                status="successful",
                mode="live",
                created_on=at(n),
                synced_at=NOW,
                first_seen_at=NOW,
            )
        with django_assert_num_queries(17) as captured:
            assert dashboard_client.get(URL).status_code == 200
        counts.append(len(captured))
    assert counts == [17, 17]  # the session, the user, two for permissions; 13 of ours


def test_only_staff_with_the_permission_see_it(staff_user):
    client = Client()
    client.force_login(staff_user("view_charge"))
    assert client.get(URL).status_code == 403
    assert URL not in client.get("/admin/").content.decode()
    client.force_login(staff_user("view_dashboard"))
    assert client.get(URL).status_code == 200
    assert URL in client.get("/admin/").content.decode()


def test_each_attention_item_links_to_a_list_of_exactly_its_rows(dashboard_client, monkeypatch):
    superuser = User.objects.create_superuser("root", "root@shop.example", None)
    now = timezone.now()
    ChargeRequest.objects.create(params={}, state="unknown")
    ChargeRequest.objects.create(params={}, state="succeeded")
    charge = charge_row()
    charge.save()
    ChargeActionRequest.objects.create(
        kind="refund", idempotency_key="k1", charge=charge, params={}, state="unknown"
    )
    ChargeActionRequest.objects.create(
        kind="refund", idempotency_key="k2", charge=charge, params={}, state="succeeded"
    )
    for n, (status, lease) in enumerate(
        [
            ("received", None),
            ("processing", now - timedelta(minutes=1)),
            ("failed", None),
            ("failed", None),
            ("processed", None),
        ]
    ):
        WebhookDelivery.objects.create(
            dedupe_key=f"d{n}", body="{}", received_at=now, status=status, lease_until=lease
        )
    QuarantinedItem.objects.create(
        account="default",
        resource="charge",
        payload="{}",
        payload_digest="x",
        reason="no id",
        first_seen_at=now,
        last_seen_at=now,
    )
    SyncCheckpoint.objects.create(
        account="default", resource="charges", last_completed_at=now - timedelta(days=1)
    )
    SyncCheckpoint.objects.create(account="other", resource="charges", last_completed_at=now)
    event = uuid.uuid4()
    for receiver, status in [
        ("a.one", "not_heard"),
        ("a.two", "not_heard"),
        ("a.three", "processed"),
    ]:
        Announcement.objects.create(
            event_id=event,
            signal="charge_status_changed",
            receiver=receiver,
            sender="django_paycharge.charge",
            arguments={},
            created_at=now,
            status=status,
        )
    # Payments failing on the shop's settings: counted while met recently, under the
    # settings in force (an older problem, or one under other settings, is not).
    for account, digest, seen in [
        ("default", settings_digest(), now),
        ("old", settings_digest(), now - timedelta(hours=2)),
        ("changed", "0" * 16, now),
    ]:
        OwnerProblem.objects.create(
            account=account,
            kind="credentials",
            http_status=401,
            settings_digest=digest,
            count=3,
            first_seen_at=seen,
            last_seen_at=seen,
        )
    page = dashboard_client.get(URL).content.decode()
    # The banner says what to fix, without a secret.
    assert "check PAYCHARGE[&#x27;SECRET&#x27;]" in page and "account default" in page
    links = dict(re.findall(r'data-item="([a-z_]+)">\s*<a href="([^"]+)"', page))
    expected = {
        "owner_problems": 1,
        "charge_requests_unknown": 1,
        "action_requests_unconfirmed": 1,
        "deliveries_waiting": 1,
        "deliveries_stuck": 1,
        "deliveries_failed": 2,
        "quarantined": 1,
        "syncs_behind": 1,
        "announcements_unheard": 2,
    }
    assert set(links) == set(expected)
    admin = Client()
    admin.force_login(superuser)
    for key, count in expected.items():
        assert re.search(rf'data-item="{key}">\s*<a href="[^"]+"><span[^>]*>{count}</span>', page)
        listed = admin.get(links[key].replace("&amp;", "&"))
        assert listed.status_code == 200, key
        assert listed.context["cl"].result_count == count, key


def test_refunds_are_counted_as_refunds_not_payments(dashboard_client, hand_counted, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    page = dashboard_client.get(URL).content.decode()
    refunds = page.split('id="paycharge-refunds"')[1].split("</section>")[0]
    takings = page.split('id="paycharge-takings"')[1].split("</section>")[0]
    counted = re.compile(r'<span class="quiet">(\d+ \w+)</span>')
    assert set(counted.findall(refunds)) == {"0 refunds", "1 refund"}
    assert {"1 payment", "3 payments"} <= set(counted.findall(takings))
    assert not [c for c in counted.findall(takings) if "refund" in c]


def test_an_open_konbini_payment_shows_the_deadline_its_customer_sees(
    fake_gateway, dashboard_client, settings
):
    from django_paycharge import services

    settings.TIME_ZONE = "Asia/Tokyo"
    token = fake_gateway.create_transaction_token("konbini", expiration_period="P3D")["id"]
    created = services.create_charge(transaction_token_id=token, amount=1200, currency="JPY")
    charge = services.refresh_charge(created.gateway_id)
    assert charge.status == "awaiting" and charge.capture_at is None
    instructions = services.payment_instructions(charge)  # what the customer's page reads
    assert instructions.deadline is not None
    requests_before = len(fake_gateway.requests_log)
    page = dashboard_client.get(URL, {"mode": charge.mode}).content.decode()
    assert len(fake_gateway.requests_log) == requests_before  # the mirror's, no gateway call
    row = page.split('id="paycharge-open"')[1].split("</section>")[0]
    assert "the payment period of its token" not in row
    shown = timezone.localtime(instructions.deadline).strftime("%m/%d/%Y")
    assert shown in row, row


def test_subscriptions_are_counted(dashboard_client, monkeypatch):
    """Active subscriptions, and this month's payments and failures of subscriptions."""
    monkeypatch.setattr(timezone, "now", lambda: NOW)  # March 9th, in UTC
    one, two = uuid.uuid4(), uuid.uuid4()
    for n, (status, mode) in enumerate(
        [("current", "live"), ("unpaid", "live"), ("suspended", "live"), ("current", "test")]
    ):
        Subscription.objects.create(
            gateway_id=one if n == 0 else two if n == 1 else uuid.uuid4(),
            status=status,
            mode=mode,
            synced_at=NOW,
            first_seen_at=NOW,
        )
    rows = [
        ("successful", one, at(60)),
        ("successful", two, at(2 * DAY)),
        ("failed", two, at(3 * DAY)),
        ("successful", one, at(20 * DAY)),  # February: last month
        ("successful", None, at(60)),  # not a subscription's
    ]
    for status, subscription, created_on in rows:
        charge_row(
            mode="live", status=status, subscription_id=subscription, created_on=created_on
        ).save()
    counts = dashboard_figures.compute("live", ZoneInfo("UTC")).subscriptions
    assert (counts.active, counts.renewals, counts.failures) == (2, 2, 1)
    page = dashboard_client.get(URL).content.decode()
    assert re.search(r'data-count="active">.*?>2<', page)
    assert "?status__in=current,unpaid&amp;mode__exact=live" in page
