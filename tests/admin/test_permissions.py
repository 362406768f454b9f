from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

PAGES = [
    "admin:django_paycharge_charge_changelist",
    "admin:django_paycharge_webhookconfiguration_changelist",
    "admin:django_paycharge_webhookdelivery_changelist",
]


def test_staff_without_the_apps_permissions_see_nothing_of_it(client, staff_user, make_charge):
    charge = make_charge()
    client.force_login(staff_user())
    index = client.get(reverse("admin:index"))
    assert index.status_code == 200
    assert "django_paycharge" not in index.content.decode()
    assert "Charges" not in index.content.decode()
    for name in PAGES:
        assert client.get(reverse(name)).status_code == 403, name
    assert (
        client.get(reverse("admin:django_paycharge_charge_change", args=[charge.pk])).status_code
        == 403
    )
    assert (
        client.get(reverse("admin:app_list", kwargs={"app_label": "django_paycharge"})).status_code
        == 404
    )


def test_view_permission_shows_only_that_model(client, staff_user):
    client.force_login(staff_user("view_charge"))
    html = client.get(reverse("admin:index")).content.decode()
    assert reverse("admin:django_paycharge_charge_changelist") in html
    assert reverse("admin:django_paycharge_webhookdelivery_changelist") not in html
    assert client.get(reverse(PAGES[2])).status_code == 403


def test_deliveries_inline_needs_the_delivery_view_permission(client, staff_user, make_charge):
    from django.utils import timezone

    from django_paycharge.models import WebhookDelivery

    charge = make_charge()
    WebhookDelivery.objects.create(
        event="charge_finished",
        dedupe_key="id:p1",
        body="{}",
        received_at=timezone.now(),
        charge=charge,
    )
    url = reverse("admin:django_paycharge_charge_change", args=[charge.pk])
    client.force_login(staff_user("view_charge"))
    assert "id:p1" not in client.get(url).content.decode()
    assert "webhookdelivery" not in client.get(url).content.decode()


def test_non_staff_are_sent_to_the_login(client, django_user_model):
    user = django_user_model.objects.create_user("customer", password="pw-customer-123")
    client.force_login(user)
    response = client.get(reverse(PAGES[0]))
    assert response.status_code == 302 and "/login/" in response["Location"]
