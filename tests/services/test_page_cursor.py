"""The cursor that writes sync pages behaves as Django's own, whichever way it binds."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection
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
