"""The announcements page: what was not heard, its error, Retry and Dismiss behind a permission."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from django_paycharge import signals
from django_paycharge.models import Announcement, Charge

pytestmark = pytest.mark.django_db

PAGE = reverse("admin:django_paycharge_announcement_changelist")


class Receiver:
    def __init__(self) -> None:
        self.broken = True
        self.heard: list[uuid.UUID] = []

    def __call__(self, sender: Any, **kwargs: Any) -> None:
        if self.broken:
            raise ConnectionError("orders table locked")
        self.heard.append(kwargs["event_id"])


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    signals.charge_captured.connect(made, sender=Charge, dispatch_uid="admin-test")
    yield made
    signals.charge_captured.disconnect(sender=Charge, dispatch_uid="admin-test")


def not_heard(charge: Charge) -> Announcement:
    return Announcement.objects.create(
        event_id=uuid.uuid4(),
        signal="charge_captured",
        receiver="tests.admin.test_announcements.Receiver",
        sender="django_paycharge.charge",
        arguments={"charge": {"model": "django_paycharge.charge", "pk": charge.pk}, "amount": 5},
        created_at=timezone.now(),
        status="not_heard",
        attempts=Announcement.LEASE_ATTEMPTS,
        last_error="ConnectionError: orders table locked",
    )


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_not_heard_is_shown_with_its_error(client, staff_user, make_charge):
    row = not_heard(make_charge())
    client.force_login(staff_user("view_announcement"))
    response = client.get(PAGE)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Not heard" in html and "ConnectionError: orders table locked" in html
    assert any("1 announcement was not heard" in t for t in texts(response))
    assert "retry" not in html  # the action needs its own permission
    client.post(PAGE, {"action": "retry", "_selected_action": [row.pk]})
    assert Announcement.objects.get(pk=row.pk).status == "not_heard"


def test_retry_runs_the_receiver_now(client, staff_user, make_charge, receiver):
    row = not_heard(make_charge())
    client.force_login(staff_user("view_announcement", "retry_announcement"))
    response = client.post(PAGE, {"action": "retry", "_selected_action": [row.pk]}, follow=True)
    assert f"{row} failed again: ConnectionError: orders table locked" in texts(response)
    assert Announcement.objects.get(pk=row.pk).status == "not_heard"
    receiver.broken = False
    response = client.post(PAGE, {"action": "retry", "_selected_action": [row.pk]}, follow=True)
    assert f"{row} was heard." in texts(response)
    row.refresh_from_db()
    assert (row.status, row.last_error) == ("heard", "")
    assert receiver.heard == [row.event_id]


def test_dismiss_leaves_it_alone_for_good(client, staff_user, make_charge):
    row = not_heard(make_charge())
    client.force_login(staff_user("view_announcement", "retry_announcement"))
    client.post(PAGE, {"action": "dismiss", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.status == "dismissed" and row.claimed_by.startswith("admin Dismiss by staff")


def test_staff_without_the_permission_see_nothing(client, staff_user):
    client.force_login(staff_user())
    assert client.get(PAGE).status_code == 403


def test_retry_leaves_a_receiver_waiting_for_its_back_off_or_running_alone(
    client, staff_user, make_charge, receiver
):
    charge = make_charge()
    waiting = not_heard(charge)
    running = not_heard(charge)
    later = timezone.now() + timedelta(minutes=5)
    Announcement.objects.filter(pk=waiting.pk).update(
        status="running", attempts=1, lease_until=later, claimed_by=""
    )
    Announcement.objects.filter(pk=running.pk).update(
        status="running", attempts=1, lease_until=later, claimed_by="worker (host pid 7)"
    )
    client.force_login(staff_user("view_announcement", "retry_announcement"))
    page = client.get(PAGE).content.decode()
    assert "Failed; runs again at" in page and "Running (lease until" in page
    response = client.post(
        PAGE, {"action": "retry", "_selected_action": [waiting.pk, running.pk]}, follow=True
    )
    said = texts(response)
    assert any(t.startswith(f"{waiting} failed and runs again at") for t in said), said
    assert f"{running} is running in another process; it was left alone." in said
    assert receiver.heard == [] and set(
        Announcement.objects.values_list("attempts", flat=True)
    ) == {1}
