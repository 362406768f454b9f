"""A local write that meets a locked database after the gateway said yes is run again.

The lock is real: another connection takes the database (SQLite) or the charge
table (PostgreSQL) once the gateway has said yes, so the store of that answer
meets it, as a webhook or a worker writing at that moment would.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import DatabaseError

from django_paycharge import services
from django_paycharge.models import Charge, ChargeRequest
from django_paycharge.services import retry
from tests.db_locks import locked_database

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_store_after_a_yes_is_retried_and_the_charge_returned(fake_gateway, caplog):
    token = fake_gateway.create_transaction_token("card")["id"]
    caplog.set_level(logging.INFO, "django_paycharge.services")
    with locked_database(hold=0.5):
        charge = services.create_charge(transaction_token_id=token, amount=100, currency="JPY")
    assert "met" in caplog.text and "trying again" in caplog.text  # the lock was really met
    assert list(fake_gateway.charges) == [str(charge.gateway_id)]
    assert ChargeRequest.objects.get().state == "succeeded"
    assert Charge.objects.get().pk == charge.pk


def test_what_still_fails_after_the_bound_is_left_for_recovery(fake_gateway, monkeypatch):
    token = fake_gateway.create_transaction_token("card")["id"]
    monkeypatch.setattr(retry, "ATTEMPTS", 2)
    monkeypatch.setattr(retry, "PAUSE_MAX", 0.01)
    # Locked until the write has given up: its two attempts meet the lock however slow the
    # host (a 1 s lock was a race between the lock's end and the attempts).
    with locked_database(hold=None), pytest.raises(DatabaseError):
        services.create_charge(transaction_token_id=token, amount=100, currency="JPY")
    assert len(fake_gateway.charges) == 1  # the gateway said yes; the mirror could not store it
    request = ChargeRequest.objects.get()
    assert request.state == "unknown"  # not failed, not abandoned: recovery will ask
    result = services.recover_charge_requests(older_than=timedelta(0))
    assert result.settled == 1
    request.refresh_from_db()
    assert request.state == "succeeded" and request.charge is not None
    assert list(fake_gateway.charges) == [str(request.charge.gateway_id)]
