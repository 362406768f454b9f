"""The cursor that writes sync pages behaves as Django's own, whichever way it binds."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, connections
from django.test.utils import CaptureQueriesContext

from django_paycharge.services import _upsert_sql as sql

pytestmark = pytest.mark.django_db

QUOTED = "it's a \\ back'slash"


def test_a_page_cursor_runs_parameters_with_quotes_and_backslashes():
    with sql.page_cursor(connection) as cursor:
        cursor.execute("SELECT %s, %s", [QUOTED, 7])
        assert cursor.fetchone() == (QUOTED, 7)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="runs in the PostgreSQL pass")
def test_on_postgresql_a_page_cursor_binds_on_the_server():
    import psycopg

    with sql.page_cursor(connection) as cursor:
        assert type(cursor.cursor) is psycopg.Cursor  # not Django's default ClientCursor
        cursor.execute("SELECT %s::json ->> 'note'", ['{"note": "it\'s"}'])
        assert cursor.fetchone() == ("it's",)
    with CaptureQueriesContext(connection), sql.page_cursor(connection) as cursor:
        assert type(cursor.cursor) is psycopg.Cursor  # while queries are logged too


@pytest.mark.skipif(connection.vendor != "sqlite", reason="runs in the SQLite passes")
def test_on_sqlite_a_page_cursor_converts_a_statement_once(monkeypatch):
    from django.db.backends.sqlite3.base import SQLiteCursorWrapper

    calls = []
    convert = SQLiteCursorWrapper.convert_query

    def counted(self, query, *, param_names=None):
        calls.append(query)
        return convert(self, query, param_names=param_names)

    monkeypatch.setattr(SQLiteCursorWrapper, "convert_query", counted)
    monkeypatch.setattr(sql, "_CONVERTED", {})  # nothing remembered from other tests
    query = "SELECT '%%s 100%%', %s, %s -- converted once"
    for value in (1, 2, 3):
        with sql.page_cursor(connection) as cursor:
            cursor.execute(query, [value, QUOTED])
            assert cursor.fetchone() == ("%s 100%", value, QUOTED)
    assert calls == [query]
    with sql.page_cursor(connection) as cursor:  # named parameters: converted every time
        cursor.execute("SELECT %(a)s, %(a)s", {"a": 5})
        assert cursor.fetchone() == (5, 5)
    assert calls == [query, "SELECT %(a)s, %(a)s"]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="runs in the SQLite passes")
def test_the_remembered_conversions_stay_few(monkeypatch):
    monkeypatch.setattr(sql, "_CONVERTED", {})
    with sql.page_cursor(connection) as cursor:
        for n in range(3 * sql._CONVERTED_MAX):
            cursor.execute(f"SELECT %s + {n}", [1])
            assert cursor.fetchone() == (1 + n,)
    assert len(sql._CONVERTED) <= sql._CONVERTED_MAX


def test_a_backend_with_its_own_cursors_gets_them_for_pages_too(monkeypatch):
    # A backend subclass that makes its own cursors (django-prometheus counts
    # queries that way) must see the page statements as well.
    made = []
    backend = type(connections["default"])
    create_cursor = backend.create_cursor

    def own_cursor(self, name=None):
        made.append(name)
        return create_cursor(self, name)

    monkeypatch.setattr(backend, "create_cursor", own_cursor)
    with sql.page_cursor(connection) as cursor:
        cursor.execute("SELECT %s", [QUOTED])
        assert cursor.fetchone() == (QUOTED,)
    assert made == [None]


def test_a_page_cursor_goes_through_execute_wrappers_and_query_logging():
    seen = []

    def wrapper(execute, query, params, many, context):
        seen.append(query)
        return execute(query, params, many, context)

    with (
        CaptureQueriesContext(connection) as queries,
        connection.execute_wrapper(wrapper),
        sql.page_cursor(connection) as cursor,
    ):
        cursor.execute("SELECT %s", [1])
    assert seen == ["SELECT %s"]
    assert len(queries.captured_queries) == 1


def test_a_page_cursor_raises_djangos_database_errors():
    with pytest.raises(DatabaseError), sql.page_cursor(connection) as cursor:
        cursor.execute("SELECT * FROM no_such_table_here")
