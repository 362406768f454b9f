"""An owner problem met on two threads at once: neither waits for the other's row."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from django_paycharge.models import OwnerProblem
from django_paycharge.services import problems
from tests.waiting import join


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
@pytest.mark.django_db(transaction=True)
def test_a_problem_met_on_a_thread_while_the_waiting_one_holds_its_row_does_not_wait_for_it():
    # A sync's read-ahead thread meets the wrong secret while the thread that waits for it
    # recorded the same problem in its still open transaction: a record that waited for
    # that row would wait for ever (a CI run hung so for ten minutes).
    def on_another_thread() -> None:
        try:
            problems.record("default", "credentials", status=401, code="INVALID_CREDENTIALS")
        finally:
            connections.close_all()

    OwnerProblem.objects.all().delete()  # one an earlier test's thread committed
    with transaction.atomic():
        problems.record("default", "credentials", status=401, code="INVALID_CREDENTIALS")
        reader = threading.Thread(target=on_another_thread, name="read-ahead")
        reader.start()
        join(reader, "the other thread's record")
        assert connection.in_atomic_block  # its record did not end this transaction
    [problem] = OwnerProblem.objects.all()
    assert (problem.kind, problem.count) == ("credentials", 1)  # the other gave up its write
