"""``Compiled``: a queryset compiled once a connection gives what the queryset gives, for
every value it is run with."""

from __future__ import annotations

import gc
import threading
import uuid
import weakref
from typing import Any

import pytest
from django.db import connection, connections
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_paycharge.models import Charge, ChargeActionRequest, Refund
from django_paycharge.models.compiled import Compiled


def charge(amount: int) -> Charge:
    now = timezone.now()
    return Charge.objects.create(
        gateway_id=uuid.uuid4(), charged_amount=amount, synced_at=now, first_seen_at=now
    )


def refund(of: Charge, amount: int, status: str) -> None:
    of.refunds.create(
        gateway_id=uuid.uuid4(), amount=amount, status=status,
        synced_at=of.synced_at, first_seen_at=of.first_seen_at,
    )  # fmt: skip


@pytest.mark.django_db
def test_rows_are_the_querysets_for_each_value_and_the_query_is_built_once():
    built = []

    def sums(pks: list[int], status: str) -> Any:
        built.append((pks, status))
        refunds = Refund.objects.filter(charge__in=pks, status=status)
        return refunds.values_list("charge").annotate(total=Sum("amount")).order_by("charge")

    compiled = Compiled(sums)
    a, b, c = charge(1000), charge(2000), charge(3000)
    for of, amount, status in ((a, 100, "successful"), (a, 200, "successful"),
                               (b, 50, "pending"), (c, 70, "successful")):  # fmt: skip
        refund(of, amount, status)
    cases = [([a.pk, b.pk], "successful"), ([b.pk, c.pk], "successful"), ([a.pk, b.pk], "pending")]
    for pks, status in cases:
        expected = [(pk, int(total)) for pk, total in sums(pks, status)]
        assert compiled.rows("default", pks, status) == expected
    # Once for each of the three cases above, then once compiled for lists of two.
    assert len(built) == len(cases) + 1
    assert compiled.rows("default", [c.pk], "successful") == [(c.pk, 70)]  # another length
    assert len(built) == len(cases) + 2


@pytest.mark.django_db
def test_converters_apply_and_the_statement_is_one_query():
    paid = charge(1000)
    ChargeActionRequest.objects.create(
        kind="refund", charge=paid, idempotency_key="k-1", params={"amount": 300}
    )
    compiled = Compiled(
        lambda key: ChargeActionRequest.objects.filter(idempotency_key=key).values_list(
            "charge", "params", "created_at"
        )
    )
    assert compiled.rows("default", "k-2") == []
    with CaptureQueriesContext(connection) as queries:
        [(pk, params, created)] = compiled.rows("default", "k-1")
    assert len(queries) == 1
    assert (pk, params) == (paid.pk, {"amount": 300})  # JSON decoded, as the ORM would
    assert created.tzinfo is not None


@pytest.mark.django_db
def test_a_value_that_does_not_reach_the_sql_unchanged_is_refused():
    # A prefix's parameter is the value and a wildcard: run with another, it would be lost.
    compiled = Compiled(lambda text: Charge.objects.filter(status__startswith=text).values_list())
    with pytest.raises(ValueError, match="not passed to the SQL unchanged"):
        compiled.rows("default", "succ")


@pytest.mark.django_db
def test_uuids_are_sent_as_the_database_takes_them():
    """As ``uuid`` columns on PostgreSQL, as hex digits on SQLite: both run the same."""
    a, b = charge(1000), charge(2000)
    compiled = Compiled(lambda ids: Charge.objects.filter(gateway_id__in=ids).values_list("pk"))
    assert compiled.rows("default", [a.gateway_id]) == [(a.pk,)]
    assert compiled.rows("default", [str(b.gateway_id)]) == [(b.pk,)]  # its text, too
    assert compiled.rows("default", [uuid.uuid4()]) == []


@pytest.mark.django_db(transaction=True)
def test_a_threads_connection_is_not_kept_alive_by_its_compiled_queries():
    """A connection is a thread's: once the thread ends and the connection is dropped, it
    goes (a web server's threads each open one; kept, they exhaust the database's)."""
    compiled = Compiled(lambda pk: Charge.objects.filter(pk=pk).values_list("pk"))
    seen: list[weakref.ref[Any]] = []

    def in_a_thread() -> None:
        assert compiled.rows("default", 1) == []
        seen.append(weakref.ref(connections["default"]))
        connections["default"].close()

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    del thread
    gc.collect()
    assert seen and seen[0]() is None
