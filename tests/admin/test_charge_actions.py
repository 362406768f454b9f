from __future__ import annotations

import uuid
from importlib.util import find_spec

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.urls import reverse

from django_paycharge.models import Charge, IssuerToken

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_paycharge_charge_changelist")
SYNC = reverse("admin:django_paycharge_charge_sync")


def run_action(client, action, charges, **extra):
    return client.post(
        CHANGELIST,
        {"action": action, "_selected_action": [c.pk for c in charges], **extra},
        follow=True,
    )


def texts(response):
    return [str(m) for m in get_messages(response.wsgi_request)] or [
        str(m) for m in response.context["messages"]
    ]


def test_refresh_updates_the_status(admin_client, fake_gateway, gateway_charge):
    charge = gateway_charge("konbini")
    assert charge.status == "awaiting"
    fake_gateway.complete(str(charge.gateway_id))
    response = run_action(admin_client, "refresh_from_gateway", [charge])
    assert response.status_code == 200
    assert f"Charge {charge.gateway_id} refreshed: Successful." in texts(response)
    charge.refresh_from_db()
    assert charge.status == "successful"


def test_refresh_reports_each_charge_and_never_fails_the_page(
    admin_client, fake_gateway, gateway_charge, make_charge
):
    known = gateway_charge("card")
    unknown = make_charge(store_id=uuid.UUID(fake_gateway.settings()["STORE_ID"]))
    response = run_action(admin_client, "refresh_from_gateway", [known, unknown])
    assert response.status_code == 200
    messages = texts(response)
    assert f"Charge {known.gateway_id} refreshed: Successful." in messages
    [failure] = [m for m in messages if str(unknown.gateway_id) in m]
    # Said in words, not as "(HTTP 404, RESOURCE_NOT_FOUND) (storeId: NOT_FOUND)".
    assert f"the gateway has no such charge in store {unknown.store_id}" in failure
    assert "left as it was" in failure
    # The ids are random: look for the status code outside them.
    words = failure.replace(str(unknown.gateway_id), "").replace(str(unknown.store_id), "")
    assert "404" not in words and "RESOURCE_NOT_FOUND" not in words


def test_refresh_is_capped(admin_client, make_charge, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ADMIN_MAX_GATEWAY_CALLS": 2}
    charges = [make_charge() for _ in range(3)]
    response = run_action(admin_client, "refresh_from_gateway", charges)
    assert any("at most 2" in m for m in texts(response))


def test_detail_refresh_button(admin_client, fake_gateway, gateway_charge):
    charge = gateway_charge("online")
    fake_gateway.complete(str(charge.gateway_id))
    url = reverse("admin:django_paycharge_charge_refresh", args=[charge.pk])
    assert admin_client.get(url).status_code == 403  # POST only
    response = admin_client.post(url, follow=True)
    assert response.redirect_chain[-1][0].endswith(f"/{charge.pk}/change/")
    charge.refresh_from_db()
    assert charge.status == "successful"


# -- Fetch issuer token --------------------------------------------------------------------


def test_fetch_issuer_token_online(admin_client, gateway_charge):
    charge = gateway_charge("online")
    response = run_action(admin_client, "fetch_issuer_token_action", [charge])
    html = response.content.decode()
    assert response.templates[0].name == "admin/django_paycharge/charge/issuer_tokens.html"
    token = IssuerToken.objects.get(charge=charge)
    assert token.call_method == "http_post"
    assert f'href="{token.issuer_token}"' in html
    assert "http_post" in html
    assert f"Charge {charge.gateway_id}: issuer token fetched (Online wallet)." in html


def test_fetch_issuer_token_bank_transfer_awaiting_masks_without_permission(
    client, gateway_charge, staff_user
):
    charge = gateway_charge("bank_transfer")
    client.force_login(staff_user("view_charge", "call_gateway"))
    response = run_action(client, "fetch_issuer_token_action", [charge])
    token = IssuerToken.objects.get(charge=charge)
    html = response.content.decode()
    assert "Fake Branch" in html and "PAYCHARGE FAKE" in html
    assert token.account_number not in html
    assert token.masked_account_number in html


def test_fetch_issuer_token_bank_transfer_full_number_with_permission(
    client, gateway_charge, staff_user
):
    charge = gateway_charge("bank_transfer")
    client.force_login(staff_user("view_charge", "call_gateway", "view_bank_account_number"))
    response = run_action(client, "fetch_issuer_token_action", [charge])
    token = IssuerToken.objects.get(charge=charge)
    assert token.account_number in response.content.decode()


def test_fetch_issuer_token_bank_transfer_not_awaiting(admin_client, fake_gateway, gateway_charge):
    charge = gateway_charge("bank_transfer")
    fake_gateway.complete(str(charge.gateway_id))
    response = run_action(admin_client, "fetch_issuer_token_action", [charge])
    assert response.status_code == 200
    html = response.content.decode()
    assert "its status is now Successful" in html
    assert not IssuerToken.objects.filter(charge=charge).exists()


@pytest.mark.parametrize("ending", ["expire", "complete"])
def test_fetch_issuer_token_of_a_wallet_payment_no_longer_awaiting_is_refused(
    admin_client, fake_gateway, gateway_charge, ending
):
    charge = gateway_charge("online")
    getattr(fake_gateway, ending)(str(charge.gateway_id))  # canceled (expired), or paid
    response = run_action(admin_client, "fetch_issuer_token_action", [charge])
    html = response.content.decode()
    assert "The wallet payment can only be continued while it waits for the customer" in html
    assert "/_fake/provider/" not in html  # no live provider URL handed out
    assert not IssuerToken.objects.filter(charge=charge).exists()


def test_fetch_issuer_token_card_says_why(admin_client, gateway_charge):
    charge = gateway_charge("card")
    response = run_action(admin_client, "fetch_issuer_token_action", [charge])
    assert response.status_code == 200
    # A card's only issuer token is its 3-D Secure one, while it awaits the customer.
    assert "3-D Secure only while it is awaiting the customer" in response.content.decode()


def test_fetch_issuer_token_mixed_selection(admin_client, gateway_charge):
    online, card = gateway_charge("online"), gateway_charge("card")
    response = run_action(admin_client, "fetch_issuer_token_action", [online, card])
    html = response.content.decode()
    assert html.count("paycharge-token-result") == 2
    assert IssuerToken.objects.filter(charge=online).exists()


# -- Sync now ------------------------------------------------------------------------------


@pytest.fixture
def inline_tasks(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "inline"}


def test_sync_now_runs_the_sync_and_reports_counts(admin_client, fake_gateway, inline_tasks):
    fake_gateway.seed(30)
    assert admin_client.get(SYNC).status_code == 403  # POST only
    response = admin_client.post(SYNC, follow=True)
    assert response.status_code == 200
    [message] = texts(response)
    assert "Synced account default: 30 charges read, 30 new" in message
    assert Charge.objects.count() == 30


def sync_said(messages):
    """The sync's own message; any other is the owner's banner (a wrong secret is theirs)."""
    said = [m for m in messages if m.startswith(("Sync", "Synced"))]
    assert len(said) == 1, messages
    assert all(m.startswith("Payments of account") for m in messages if m not in said), messages
    return said[0]


def test_sync_now_reports_a_gateway_failure(admin_client, fake_gateway, settings, inline_tasks):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "wrong-secret-000000"}
    response = admin_client.post(SYNC, follow=True)
    assert response.status_code == 200
    message = sync_said(texts(response))
    assert message.startswith("Sync of account default failed:")


def test_sync_now_without_a_task_backend_reads_a_bounded_number_of_pages_and_says_so(
    admin_client, fake_gateway, settings, inline_tasks
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ADMIN_SYNC_MAX_PAGES": 2}
    fake_gateway.seed(450)
    first = texts(admin_client.post(SYNC, follow=True))
    assert "Synced account default: 200 charges read, 200 new" in first[0]
    assert "more to read than 2 pages" in first[1] and "paycharge_sync" in first[1]
    assert Charge.objects.count() == 200
    admin_client.post(SYNC, follow=True)
    [last] = texts(admin_client.post(SYNC, follow=True))  # the rest, then nothing more to say
    assert Charge.objects.count() == 450
    assert last.startswith("Synced account default:")


def test_sync_now_says_when_a_sync_of_the_account_is_already_running(
    admin_client, fake_gateway, inline_tasks
):
    from django_paycharge.services.sync.lock import account_lock

    with account_lock("default") as held:
        assert held
        [message] = texts(admin_client.post(SYNC, follow=True))
    assert message == "A sync of account default is already running: nothing to do now."


@pytest.mark.django_db(transaction=True)
def test_sync_now_enqueues_when_tasks_are_configured(admin_client, fake_gateway, settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    fake_gateway.seed(5)
    response = admin_client.post(SYNC, follow=True)
    [message] = texts(response)
    assert "queued" in message
    assert Charge.objects.count() == 0  # not synced inside the request
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert Charge.objects.count() == 5


def test_sync_now_with_an_immediate_backend_reports_what_it_did(
    admin_client, fake_gateway, settings
):
    module = "django.tasks" if find_spec("django.tasks") else "django_tasks"
    settings.TASKS = {"default": {"BACKEND": f"{module}.backends.immediate.ImmediateBackend"}}
    fake_gateway.seed(4)
    [message] = texts(admin_client.post(SYNC, follow=True))
    assert "Synced account default: 4 charges read, 4 new" in message
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "wrong-secret-000000"}
    message = sync_said(texts(admin_client.post(SYNC, follow=True)))
    assert message.startswith("Sync of account default failed:")
    # An immediate backend runs work inline (TASKS="auto"), so the sync's own error shows.
    assert "rejected the credentials" in message
    assert "wrong-secret" not in message


# -- Permissions ---------------------------------------------------------------------------


def test_gateway_actions_hidden_and_refused_without_permission(client, staff_user, make_charge):
    charge = make_charge(status="awaiting")
    client.force_login(staff_user("view_charge"))
    html = client.get(CHANGELIST).content.decode()
    assert "refresh_from_gateway" not in html
    assert "fetch_issuer_token_action" not in html
    assert "Sync now" not in html
    response = client.post(
        CHANGELIST, {"action": "refresh_from_gateway", "_selected_action": [charge.pk]}
    )
    assert response.status_code in (200, 302)
    assert not any("refreshed" in str(m) for m in get_messages(response.wsgi_request))
    assert client.post(SYNC).status_code == 403
    refresh = reverse("admin:django_paycharge_charge_refresh", args=[charge.pk])
    assert client.post(refresh).status_code == 403
    detail = client.get(reverse("admin:django_paycharge_charge_change", args=[charge.pk]))
    assert "Refresh from gateway" not in detail.content.decode()


def test_gateway_actions_offered_with_permission(client, staff_user):
    client.force_login(staff_user("view_charge", "call_gateway"))
    html = client.get(CHANGELIST).content.decode()
    assert "refresh_from_gateway" in html and "fetch_issuer_token_action" in html
    assert "Sync now" in html
