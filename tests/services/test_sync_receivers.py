"""What a sync's receivers cost (issue 43): a page's changes are announced in one write and
heard after the page, in order: by the syncing thread, or by a task where a task backend
runs our work; a first import may store history without announcing it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from django_paycharge import queue, services, signals
from django_paycharge.models import Announcement, Charge

pytestmark = pytest.mark.django_db(transaction=True)

TABLE = Announcement._meta.db_table


class Shop:
    """A receiver of ``charge_status_changed`` that says where and when it ran."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.inside_a_transaction: list[bool] = []

    def payment_changed(self, sender: Any, charge: Charge, status: str, **kwargs: Any) -> None:
        self.heard.append(str(charge.gateway_id))
        self.inside_a_transaction.append(transaction.get_connection().in_atomic_block)


@pytest.fixture
def shop() -> Iterator[Shop]:
    made = Shop()
    signals.charge_status_changed.connect(made.payment_changed, sender=Charge, weak=False)
    yield made
    signals.charge_status_changed.disconnect(made.payment_changed, sender=Charge)


def _writes(queries: CaptureQueriesContext, verb: str) -> int:
    return sum(
        1
        for q in queries.captured_queries
        if q["sql"].startswith(verb) and f'"{TABLE}"' in q["sql"].split("SET")[0][:120]
    )


def test_a_page_is_announced_in_one_write_and_heard_after_its_commit(fake_gateway, shop):
    fake_gateway.seed(250)
    with CaptureQueriesContext(connection) as queries:
        result = services.sync_charges(windows=1)  # one reader: this thread's connection
    assert (result.pages, result.created) == (3, 250)
    # One INSERT a page, not one a charge; and one UPDATE a page marks its receivers heard.
    assert _writes(queries, "INSERT") == result.pages
    assert _writes(queries, "UPDATE") == result.pages
    stored = Charge.objects.values_list("gateway_id", flat=True)
    assert sorted(shop.heard) == sorted(str(gid) for gid in stored)  # each charge, once
    assert not any(shop.inside_a_transaction)  # after the page's commit
    assert set(Announcement.objects.values_list("status", "attempts")) == {("heard", 1)}


def test_a_page_is_heard_by_a_task_where_a_task_backend_runs_our_work(fake_gateway, shop, settings):
    from django_tasks_db.models import DBTaskResult

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    assert queue.background_enabled()
    fake_gateway.seed(250)
    result = services.sync_charges(windows=1)
    assert (result.pages, result.created) == (3, 250)
    assert shop.heard == []  # the sync did not wait for the receivers
    tasks = DBTaskResult.objects.filter(task_path__endswith=".hear_announcements")
    assert tasks.count() == result.pages
    assert set(Announcement.objects.values_list("status", flat=True)) == {"waiting"}
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert sorted(shop.heard) == sorted(
        str(g) for g in Charge.objects.values_list("gateway_id", flat=True)
    )
    assert set(Announcement.objects.values_list("status", "attempts")) == {("heard", 1)}


def test_a_page_whose_task_was_lost_is_heard_by_the_sweep(fake_gateway, shop, settings):
    from django_tasks_db.models import DBTaskResult

    from django_paycharge import periodic

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    fake_gateway.seed(30)
    services.sync_charges(windows=1)
    DBTaskResult.objects.all().delete()  # the queue lost them
    assert periodic.run_periodic(["announcements"]).failed == {}  # sent on to the queue
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    assert len(shop.heard) == 30
    assert set(Announcement.objects.values_list("status", flat=True)) == {"heard"}


def test_a_first_import_can_store_history_without_announcing_it(fake_gateway, shop):
    fake_gateway.seed(120)
    result = services.sync_charges(full=True, announce=False)
    assert result.created == 120 == Charge.objects.count()
    assert shop.heard == [] and not Announcement.objects.exists()
    # What changes afterwards is announced as ever.
    open_ids = [cid for cid, c in fake_gateway.charges.items() if c["status"] == "awaiting"]
    fake_gateway.complete(open_ids[0])
    services.sync_charges(full=True)
    assert shop.heard == [open_ids[0]]


def test_the_sync_command_stores_history_without_announcing_it(fake_gateway, shop):
    fake_gateway.seed(40)
    call_command("paycharge_sync", "--charges", "--full", "--no-announcements", verbosity=0)
    assert Charge.objects.count() == 40
    assert shop.heard == [] and not Announcement.objects.exists()
    call_command("paycharge_sync", "--charges", "--full", verbosity=0)  # nothing new: silent
    assert shop.heard == []


def test_a_new_charge_is_heard_as_the_database_stores_it(fake_gateway):
    """A page's new charges reach receivers built from the rows just written, not read back:
    each field as reading the row would give it, value and type."""
    fake_gateway.seed(150)
    got: list[Charge] = []

    def keep(sender: Any, charge: Charge, **kwargs: Any) -> None:
        got.append(charge)

    signals.charge_status_changed.connect(keep, sender=Charge, weak=False)
    try:
        services.sync_charges(windows=1)
    finally:
        signals.charge_status_changed.disconnect(keep, sender=Charge)
    stored = Charge.objects.in_bulk([c.gateway_id for c in got], field_name="gateway_id")
    assert len(got) == len(stored) == 150
    names = [f.attname for f in Charge._meta.concrete_fields]
    for charge in got:
        again = stored[charge.gateway_id]
        mine = {name: getattr(charge, name) for name in names}
        theirs = {name: getattr(again, name) for name in names}
        assert mine == theirs
        assert {k: type(v) for k, v in mine.items()} == {k: type(v) for k, v in theirs.items()}
        # Built as from_db builds it: no attribute more or less, saved on this database.
        assert set(vars(charge)) == set(vars(again))
        assert (charge._state.adding, charge._state.db) == (False, again._state.db)
        assert charge.pk == again.pk


def test_a_new_charge_is_built_through_init_when_someone_listens_to_it(fake_gateway):
    """The charges a page builds for its receivers skip ``Model.__init__`` only while no one
    hears ``pre_init`` or ``post_init`` for them: a shop's ``post_init`` receiver still runs."""
    fake_gateway.seed(20)
    got: list[Charge] = []
    initialised: list[Charge] = []

    def keep(sender: Any, charge: Charge, **kwargs: Any) -> None:
        got.append(charge)

    def init(sender: Any, instance: Charge, **kwargs: Any) -> None:
        initialised.append(instance)

    signals.charge_status_changed.connect(keep, sender=Charge, weak=False)
    post_init.connect(init, sender=Charge, weak=False)
    try:
        services.sync_charges(windows=1)
    finally:
        signals.charge_status_changed.disconnect(keep, sender=Charge)
        post_init.disconnect(init, sender=Charge)
    assert len(got) == 20
    assert {id(charge) for charge in got} <= {id(charge) for charge in initialised}


def test_a_new_charges_fraction_is_heard_as_the_database_gives_it_back(fake_gateway):
    """A page is decoded with fractions as ``Decimal`` (money never passes through a float);
    the charge a receiver is handed holds its JSON as reading it back would: a float."""
    token = fake_gateway.create_transaction_token("card")["id"]
    made = services.create_charge(
        transaction_token_id=token, amount=900, currency="JPY", metadata={"weight": 12.5}
    )
    Charge.objects.all().delete()
    got: list[Charge] = []

    def keep(sender: Any, charge: Charge, **kwargs: Any) -> None:
        got.append(charge)

    signals.charge_status_changed.connect(keep, sender=Charge, weak=False)
    try:
        services.sync_charges(windows=1)
    finally:
        signals.charge_status_changed.disconnect(keep, sender=Charge)
    [charge] = got
    assert charge.gateway_id == made.gateway_id and charge.metadata is not None
    weight = charge.metadata["weight"]
    assert (weight, type(weight)) == (12.5, float)
    assert charge.metadata == Charge.objects.get().metadata
