"""The owner's problems in the admin: the banner on the charges list, the list itself."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from django_paycharge.models import OwnerProblem
from django_paycharge.services.problems import settings_digest

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_owner_problems")]


def problem(account: str, kind: str, *, digest: str | None = None, ago: float = 0) -> None:
    seen = timezone.now() - timedelta(minutes=ago)
    OwnerProblem.objects.create(
        account=account,
        kind=kind,
        http_status=404 if kind == "store" else None,
        code="NOT_FOUND" if kind == "store" else "",
        settings_digest=settings_digest() if digest is None else digest,
        count=2,
        first_seen_at=seen,
        last_seen_at=seen,
    )


def test_the_charges_list_opens_with_what_the_owner_must_fix(staff_user):
    problem("default", "store")
    problem("stale", "credentials", ago=90)  # met over an hour ago
    problem("changed", "credentials", digest="f" * 16)  # under other settings
    client = Client()
    client.force_login(staff_user("view_charge"))
    page = client.get("/admin/django_paycharge/charge/").content.decode()
    assert "Payments of account default are failing" in page
    assert "PAYCHARGE[&#x27;STORE_ID&#x27;]" in page
    assert "account stale" not in page and "account changed" not in page


def test_the_list_shows_every_problem_and_filters_the_current_ones(staff_user):
    problem("default", "unreachable")
    problem("stale", "credentials", ago=90)
    client = Client()
    client.force_login(staff_user("view_ownerproblem"))
    url = "/admin/django_paycharge/ownerproblem/"
    assert client.get(url).context["cl"].result_count == 2
    current = client.get(url + "?current=yes")
    assert current.context["cl"].result_count == 1
    assert "PAYCHARGE[&#x27;BASE_URL&#x27;]" in current.content.decode()
