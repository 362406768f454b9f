"""The changelist at scale: estimated counts, an index for every filter and range."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.admin.sites import site
from django.db import connection
from django.test import RequestFactory

from django_paycharge.admin.paginator import EstimatedCountPaginator, estimated_count
from django_paycharge.models import Charge

from .conftest import charge_row

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="planner estimates exist on PostgreSQL only"
)


STORE = "33333333-3333-4333-8333-333333333333"


def fill(n, **fields):
    Charge.objects.bulk_create([charge_row(**fields) for _ in range(n)], batch_size=1000)


def fill_in_the_database(n):
    """``n`` charges like :func:`fill`'s, copied from one by the database (INSERT ... SELECT
    over a series): its own id, order number, amount and time a row, no model instance."""
    fill(1)
    quote = connection.ops.quote_name
    varied = ("gateway_id", "merchant_transaction_id", "requested_amount", "created_on")
    columns_of = (f.column for f in Charge._meta.concrete_fields)
    kept = [c for c in columns_of if c is not None and c not in {*varied, "id"}]
    if connection.vendor == "postgresql":
        series = "generate_series(1, %s) AS s(i)"
        new_id, when = "gen_random_uuid()", "c.created_on - s.i * interval '1 minute'"
        prefix = ""
    else:  # SQLite keeps a UUID as 32 hex digits and a time as its ISO text
        prefix = "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %s) "
        series, new_id = "s", "lower(hex(randomblob(16)))"
        when = "strftime('%%Y-%%m-%%d %%H:%%M:%%f', c.created_on, '-' || s.i || ' minutes')"
    table = quote(Charge._meta.db_table)
    columns = ", ".join(quote(c) for c in [*varied, *kept])
    values = {
        "gateway_id": new_id,
        "merchant_transaction_id": "'order-bulk-' || s.i",
        "requested_amount": "c.requested_amount + s.i",
        "created_on": when,
    }
    selected = ", ".join([*(values[c] for c in varied), *(f"c.{quote(c)}" for c in kept)])
    with connection.cursor() as cursor:
        cursor.execute(
            f"{prefix}INSERT INTO {table} ({columns}) SELECT {selected} FROM {table} c, {series}",
            [n - 1],
        )
    assert Charge.objects.count() == n


def test_exact_count_off_postgresql_or_below_the_threshold(settings):
    fill(30)
    if connection.vendor == "postgresql":
        # The planner's figure as autovacuum would leave it: the 100,000-row test may have
        # run on this database before, and its ANALYZE outlives its rolled-back rows.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE django_paycharge_charge")
    paginator = EstimatedCountPaginator(Charge.objects.all(), 10)
    assert paginator.count == 30
    assert not paginator.estimated


@postgres_only
def test_estimate_above_the_threshold(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ADMIN_ESTIMATED_COUNT_THRESHOLD": 100}
    fill(2000)
    fill(500, status="failed")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE django_paycharge_charge")
    whole = EstimatedCountPaginator(Charge.objects.order_by("-created_on"), 50)
    assert whole.estimated is False
    assert 2000 <= whole.count <= 3000
    assert whole.estimated
    filtered = EstimatedCountPaginator(Charge.objects.filter(status="failed"), 50)
    assert 400 <= filtered.count <= 600 and filtered.estimated
    # Few rows: exact.
    small = EstimatedCountPaginator(Charge.objects.filter(status="pending"), 50)
    assert small.count == 0 and not small.estimated


@postgres_only
def test_whole_table_estimate_reads_pg_class_without_counting():
    fill(50)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE django_paycharge_charge")
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert estimated_count(Charge.objects.all()) == 50
    assert "pg_class" in queries.captured_queries[0]["sql"]
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)


def test_an_empty_query_is_counted_without_a_statement(django_assert_num_queries):
    """A search that can name nothing gives ``none()``: PostgreSQL's EXPLAIN of it is empty
    (the subscriptions' list answered such a search with a 500)."""
    fill(3)
    with django_assert_num_queries(0):
        paginator = EstimatedCountPaginator(Charge.objects.none(), 10)
        assert paginator.count == 0 and not paginator.estimated and not paginator.capped
    assert estimated_count(Charge.objects.none()) in (0, None)  # None: not PostgreSQL


@postgres_only
def test_a_table_never_analyzed_is_counted_in_the_same_statements():
    """No estimate before the first ANALYZE: counted (capped), never an EXPLAIN more, so a
    page's statements do not depend on when autovacuum last ran."""
    fill(40)
    with connection.cursor() as cursor:  # as a fresh table: rolled back with the test
        cursor.execute(
            "UPDATE pg_class SET reltuples = -1 WHERE oid = 'django_paycharge_charge'::regclass"
        )
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert estimated_count(Charge.objects.all()) is None
    assert len(queries) == 1 and "pg_class" in queries.captured_queries[0]["sql"]
    paginator = EstimatedCountPaginator(Charge.objects.all(), 10)
    assert paginator.count == 40 and not paginator.estimated and not paginator.capped


FILTERS = [
    {},
    {"status__exact": "failed"},
    {"mode__exact": "live"},
    {"currency": "USD"},
    {"account": "other"},
    {"store": "33333333-3333-4333-8333-333333333333"},
    {"payment_type__exact": "online"},
    {"refunds": "refunded"},
    {"refunds": "partially_refunded"},
    {"created_on__gte": "2100-01-01T00:00:00+00:00"},
    {"q": "order-17"},
    {"q": "33333333-3333-4333-8333-333333333333"},
    {"amount_min": "1000", "amount_max": "2000"},
    {"amount_min": "99000"},
    {"store": "33333333-3333-4333-8333-333333333333", "amount_min": "5000", "amount_max": "6000"},
]


@postgres_only
@pytest.mark.parametrize("params", FILTERS, ids=lambda p: ",".join(p) or "all")
def test_every_filter_and_search_can_use_an_index(admin_user, params):
    fill(1500)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE django_paycharge_charge")
    request = RequestFactory().get("/admin/django_paycharge/charge/", params)
    request.user = admin_user
    model_admin = site._registry[Charge]
    changelist = model_admin.get_changelist_instance(request)
    queryset = changelist.get_queryset(request)
    with connection.cursor() as cursor:
        # With sequential scans priced out, a plan that still has one has no index to use.
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = queryset[:50].explain()
        count_plan = queryset.order_by().select_related(None).explain()
    assert "Seq Scan on django_paycharge_charge" not in plan, plan
    if params:
        # The count has no ORDER BY: an index appears in its plan only for the condition,
        # or as the partial index whose own condition is the filter's (refunded charges).
        # (The whole table is not counted at all: pg_class.reltuples, see above.)
        partial = "using paycharge_charge_refunded on" in count_plan and "refunds" in params
        assert "Index Cond" in count_plan or partial, count_plan


@pytest.mark.slow  # 100,000 rows written
def test_an_id_prefix_search_reads_the_id_index_at_100_000_charges(admin_user):
    """8 hex characters of a charge id find it through the unique index, then the list reads
    it by its primary key: no table scan."""
    from django_paycharge.admin.search import id_prefix_range

    fill_in_the_database(100_000)
    wanted = Charge.objects.order_by("?").first()
    assert wanted is not None
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    prefix = str(wanted.gateway_id)[:8]
    request = RequestFactory().get("/admin/django_paycharge/charge/", {"q": prefix})
    request.user = admin_user
    changelist = site._registry[Charge].get_changelist_instance(request)
    queryset = changelist.get_queryset(request)
    assert wanted.pk in {c.pk for c in queryset.all()}
    plan = queryset[:50].explain()
    # The statement that finds the prefix's keys.
    lookup = Charge.objects.filter(gateway_id__range=id_prefix_range(prefix)).order_by()
    lookup_plan = lookup.values("pk").explain()
    if connection.vendor == "postgresql":
        for shown in (plan, lookup_plan):
            assert "Seq Scan on django_paycharge_charge" not in shown, shown
        assert "django_paycharge_charge_pkey" in plan, plan
        assert "django_paycharge_charge_gateway_id_key" in lookup_plan, lookup_plan
        assert "Index Cond: ((gateway_id >=" in lookup_plan, lookup_plan
    else:
        # SQLite says SCAN for a table (or whole-index) walk, SEARCH for an index lookup.
        for shown in (plan, lookup_plan):
            assert "SCAN django_paycharge_charge" not in shown, shown
        assert "USING INTEGER PRIMARY KEY (rowid=?)" in plan, plan
        assert "SEARCH django_paycharge_charge USING COVERING INDEX" in lookup_plan, lookup_plan
        assert "gateway_id>" in lookup_plan, lookup_plan


def changelist_queryset(admin_user, params):
    request = RequestFactory().get("/admin/django_paycharge/charge/", params)
    request.user = admin_user
    changelist = site._registry[Charge].get_changelist_instance(request)
    return changelist.get_queryset(request)


AMOUNT_RANGES = [
    ({"amount_min": "1000", "amount_max": "2000"}, "paycharge_charge_amount"),
    ({"store": STORE, "amount_min": "5000", "amount_max": "6000"}, "paycharge_charge_store_amount"),
]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's plans without statistics")
@pytest.mark.parametrize(("params", "index"), AMOUNT_RANGES, ids=["amount", "store+amount"])
def test_an_amount_range_reads_its_index_where_sqlite_has_no_statistics(admin_user, params, index):
    """Django never runs ANALYZE: SQLite guesses, and must still find the range by index.

    Before these indexes the page scanned the table in its order and the count read
    every row (or every charge of the store).
    """
    stores = [uuid.UUID(STORE), uuid.uuid4()]
    rows = [charge_row(store_id=stores[n % 2], requested_amount=n * 25) for n in range(600)]
    Charge.objects.bulk_create(rows)
    queryset = changelist_queryset(admin_user, params)
    plan = queryset[:50].explain()
    count_plan = queryset.order_by().select_related(None).values("pk").explain()  # the capped count
    # SQLite says SCAN for a table (or whole-index) walk, SEARCH for an index lookup.
    assert f"SEARCH django_paycharge_charge USING INDEX {index} (" in plan, plan
    assert f"SEARCH django_paycharge_charge USING COVERING INDEX {index} (" in count_plan
    low, high = int(params["amount_min"]), int(params["amount_max"])
    in_store = [row for row in rows if "store" not in params or row.store_id == stores[0]]
    expected = {row.pk for row in in_store if low <= row.requested_amount <= high}
    assert expected and {c.pk for c in queryset} == expected


@pytest.fixture
def without_estimates(monkeypatch):
    """As on SQLite: the planner gives no estimate, so every count is counted (and capped)."""
    from django_paycharge.admin import paginator

    monkeypatch.setattr(paginator, "estimated_count", lambda queryset: None)


def test_a_count_past_the_threshold_stops_there_and_every_page_still_opens(
    settings, without_estimates
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ADMIN_ESTIMATED_COUNT_THRESHOLD": 20}
    fill(35)
    from django.test.utils import CaptureQueriesContext

    pages = EstimatedCountPaginator(Charge.objects.order_by("-created_on", "-id"), 10)
    with CaptureQueriesContext(connection) as queries:
        assert pages.count == 21  # counted up to the threshold and one more
    assert "LIMIT 21" in queries.captured_queries[0]["sql"].upper()
    assert pages.capped and not pages.estimated
    assert pages.num_pages == 3
    # Pages past the counted ones hold the rest; past the end, an empty page (no error).
    assert len(pages.page(4).object_list) == 5
    assert list(pages.page(9).object_list) == []
    exact = EstimatedCountPaginator(Charge.objects.filter(status="failed"), 10)
    assert exact.count == 0 and not exact.capped


def test_the_changelist_says_more_than_the_threshold_when_the_count_stopped(
    admin_client, settings, without_estimates
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "ADMIN_ESTIMATED_COUNT_THRESHOLD": 60}
    fill(70)
    page = admin_client.get("/admin/django_paycharge/charge/").content.decode()
    assert "more than 60 charges" in page
    assert "counted no further" in page
    assert "61 charges" not in page
    deep = admin_client.get("/admin/django_paycharge/charge/?p=99")
    assert deep.status_code == 200 and not deep.context["cl"].result_list


def test_the_rows_checkbox_is_djangos_own_markup(admin_user, make_charge):
    from django.contrib.admin import ModelAdmin

    model_admin = site._registry[Charge]
    charge = make_charge(status="successful")
    assert model_admin.action_checkbox(charge) == ModelAdmin.action_checkbox(model_admin, charge)


PREFIX_WITH_RANGES = [
    {"created_from": "2000-01-01", "created_to": "2100-01-01"},  # the whole table
    {"created_on__gte": "2000-01-01T00:00:00+00:00"},  # the date filter
]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's plans without statistics")
@pytest.mark.parametrize("dates", PREFIX_WITH_RANGES, ids=["created between", "created since"])
def test_an_id_prefix_with_a_date_range_reads_by_the_prefix_first(admin_user, dates):
    """An 8-character id with a range over the whole table: SQLite, guessing, read the range
    (every charge, 229 ms of SQL at 100,000) and checked the prefix on each row. The list
    and its count start from the id index; the range only narrows what the prefix found."""
    rows = [charge_row() for _ in range(300)]
    Charge.objects.bulk_create(rows)
    wanted = rows[100]
    queryset = changelist_queryset(admin_user, {"q": str(wanted.gateway_id)[:8], **dates})
    plan = queryset[:50].explain()
    count_plan = queryset.order_by().select_related(None).values("pk").explain()  # the capped count
    for shown in (plan, count_plan):
        assert "paycharge_charge_created" not in shown, shown
        assert "USING INTEGER PRIMARY KEY (rowid=?)" in shown, shown
    assert wanted.pk in {c.pk for c in queryset}


@postgres_only
def test_an_id_prefix_with_a_date_range_uses_indexes_on_postgresql(admin_user):
    """The prefix's keys OR the merchant transaction id: both indexes, never a walk of the
    table (a subquery in the OR was a filter on every charge: 60 ms of SQL at 100,000)."""
    fill(1500)
    wanted = Charge.objects.order_by("id")[700]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE django_paycharge_charge")
    params = {"q": str(wanted.gateway_id)[:8], **PREFIX_WITH_RANGES[0]}
    queryset = changelist_queryset(admin_user, params)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = queryset[:50].explain()
        count_plan = queryset.order_by().select_related(None).values("pk").explain()
    for shown in (plan, count_plan):
        assert "Seq Scan on django_paycharge_charge" not in shown, shown
        # Both indexes OR'ed (a subquery was a filter checked on every row walked instead).
        assert "SubPlan" not in shown, shown
        assert "paycharge_charge_mtid" in shown and "django_paycharge_charge_pkey" in shown, shown
    assert [c.pk for c in queryset] == [wanted.pk]


def test_a_prefix_shared_by_many_ids_is_searched_as_a_range(admin_user):
    """Ids made by hand (not the gateway's) may share 8 characters: all are still found."""
    from django_paycharge.admin.charges import PREFIX_IDS

    rows = [charge_row(gateway_id=uuid.UUID(int=n + 1)) for n in range(PREFIX_IDS + 5)]
    Charge.objects.bulk_create(rows)
    queryset = changelist_queryset(admin_user, {"q": "00000000", **PREFIX_WITH_RANGES[0]})
    assert {c.pk for c in queryset} == {r.pk for r in rows}


@pytest.mark.parametrize(
    ("dates", "found"),
    [
        ({"created_from": "2000-01-01", "created_to": "2100-01-01"}, True),
        ({"created_to": "2000-01-01"}, False),
        ({"created_on__gte": "2100-01-01T00:00:00+00:00"}, False),
    ],
    ids=["inside", "before", "after"],
)
def test_an_id_prefix_with_a_date_range_finds_the_charge_only_inside_it(admin_user, dates, found):
    rows = [charge_row(merchant_transaction_id=f"o-{n}") for n in range(5)]
    Charge.objects.bulk_create(rows)
    wanted = rows[2]
    for term in (str(wanted.gateway_id)[:8], str(wanted.gateway_id)[:13] + "…"):
        queryset = changelist_queryset(admin_user, {"q": term, **dates})
        assert [c.pk for c in queryset] == ([wanted.pk] if found else [])
    # A merchant transaction id of 8 hex characters is still found by itself.
    Charge.objects.filter(pk=rows[3].pk).update(merchant_transaction_id="abcdef12")
    queryset = changelist_queryset(admin_user, {"q": "abcdef12", **dates})
    assert [c.pk for c in queryset] == ([rows[3].pk] if found else [])
