"""The subscription admin: the list, the page, and suspend, resume, cancel behind permissions."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import Subscription, SubscriptionRequest

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_paycharge_subscription_changelist")


@pytest.fixture
def subscription(fake_gateway) -> Subscription:
    token = fake_gateway.create_transaction_token(type="subscription")["id"]
    return services.create_subscription(
        transaction_token_id=token,
        amount=1200,
        currency="JPY",
        period="monthly",
        metadata={"order_id": "S-1"},
    )


def run_action(client, action, subscriptions, **extra):
    data = {"action": action, "_selected_action": [s.pk for s in subscriptions], **extra}
    return client.post(CHANGELIST, data, follow=True)


def texts(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def confirm(client, action, subscriptions):
    """The confirmation page, then its "Yes": both responses."""
    page = run_action(client, action, subscriptions)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page.content.decode())
    assert key, page.content.decode()[:2000]
    return page, run_action(client, action, subscriptions, post="yes", idempotency_key=key[1])


def test_the_list_searches_and_filters(admin_client, subscription) -> None:
    html = admin_client.get(CHANGELIST).content.decode()
    assert str(subscription.gateway_id)[:8] in html and "¥1,200" in html
    assert "monthly" in html
    prefix = str(subscription.gateway_id)[:8]
    found = admin_client.get(CHANGELIST, {"q": prefix}).context["cl"].result_count
    assert found == 1
    assert admin_client.get(CHANGELIST, {"q": "nothing"}).context["cl"].result_count == 0
    filtered = admin_client.get(CHANGELIST, {"status__exact": "canceled"})
    assert filtered.context["cl"].result_count == 0


def test_the_period_is_shown_in_the_staffs_language(admin_client, subscription) -> None:
    """The column and the filter named the period as the gateway spells it ("monthly") on
    the Japanese admin too."""
    now = timezone.now()
    Subscription.objects.create(
        gateway_id=uuid.uuid4(),
        status="current",
        cyclical_period="P10D",
        synced_at=now,
        first_seen_at=now,
    )
    html = admin_client.get(CHANGELIST, HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "毎月" in html and "3か月ごと" in html  # the column, and the filter's choices
    assert ">monthly<" not in html
    assert "P10D" in html  # an ISO period, as sent
    filtered = admin_client.get(CHANGELIST, {"period__exact": "monthly"})
    assert filtered.context["cl"].result_count == 1


def test_the_page_shows_payments_and_charges(admin_client, fake_gateway, subscription) -> None:
    fake_gateway.move_clock(timedelta(days=32))
    services.scheduled_payments(subscription)
    services.sync_charges()
    page = admin_client.get(
        reverse("admin:django_paycharge_subscription_change", args=[subscription.pk])
    )
    html = page.content.decode()
    assert page.status_code == 200
    charge = subscription.charges().first()
    assert charge is not None and str(charge.gateway_id) in html
    assert html.count("¥1,200") >= 3  # the subscription and its scheduled payments
    assert "S-1" in html


def test_each_change_needs_its_own_permission(client, staff_user, subscription) -> None:
    client.force_login(staff_user("view_subscription", "suspend_subscription"))
    actions = dict(
        client.get(CHANGELIST)
        .context["cl"]
        .model_admin.get_action_choices(client.get(CHANGELIST).wsgi_request)
    )
    assert "suspend_subscriptions" in actions
    assert "cancel_subscriptions" not in actions and "resume_subscriptions" not in actions
    refused = run_action(client, "cancel_subscriptions", [subscription], post="yes")
    assert "No action selected." in texts(refused)  # Django's answer to an action not allowed
    assert not SubscriptionRequest.objects.exclude(kind="subscription_create").exists()


def test_the_page_restates_then_suspends_once(admin_client, subscription) -> None:
    page, done = confirm(admin_client, "suspend_subscriptions", [subscription])
    html = page.content.decode()
    assert str(subscription.gateway_id) in html and "¥1,200" in html
    assert "not charged again until the subscription is resumed" in html
    assert f"Subscription {subscription.gateway_id} is now Suspended." in texts(done)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', html)
    assert key
    again = run_action(  # the same page submitted twice: one suspend
        admin_client, "suspend_subscriptions", [subscription], post="yes", idempotency_key=key[1]
    )
    assert again.status_code == 200
    assert SubscriptionRequest.objects.filter(kind="subscription_suspend").count() == 1


def test_a_refusal_is_shown_not_a_500(admin_client, subscription) -> None:
    _, done = confirm(admin_client, "resume_subscriptions", [subscription])
    assert done.status_code == 200
    [message] = texts(done)
    assert str(subscription.gateway_id) in message
    assert "status (Current) does not allow this change" in message  # its label, not "current"
    assert not SubscriptionRequest.objects.filter(kind="subscription_resume").exists()


def test_cancel_is_final(admin_client, subscription) -> None:
    page, done = confirm(admin_client, "cancel_subscriptions", [subscription])
    assert "It cannot be resumed" in page.content.decode()
    assert f"Subscription {subscription.gateway_id} is now Canceled." in texts(done)
