"""Real database locks for tests: another connection holds what our next write needs."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from django_paycharge.models import Charge


@contextmanager
def locked_database(start: float, hold: float) -> Iterator[None]:
    """Another connection locks the charges for ``hold`` s, from ``start`` s on; ours won't wait."""
    settings = connection.settings_dict
    ready = threading.Event()
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        connection.connection.execute("PRAGMA busy_timeout = 0")  # Django's default shop: 5 s

        def hold_lock() -> None:
            time.sleep(start)
            other = sqlite3.connect(settings["NAME"], isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            ready.set()
            time.sleep(hold)
            other.execute("ROLLBACK")
            other.close()

    else:
        import psycopg

        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '100ms'")

        def hold_lock() -> None:
            time.sleep(start)
            with psycopg.connect(
                host=settings["HOST"],
                port=settings["PORT"],
                user=settings["USER"],
                password=settings["PASSWORD"] or None,
                dbname=settings["NAME"],
            ) as other:
                table = Charge._meta.db_table
                other.execute(f'LOCK TABLE "{table}" IN EXCLUSIVE MODE')
                ready.set()
                time.sleep(hold)

    thread = threading.Thread(target=hold_lock)
    thread.start()
    try:
        yield
    finally:
        thread.join()
        assert ready.is_set()
        if connection.vendor == "sqlite":
            connection.connection.execute("PRAGMA busy_timeout = 20000")
        else:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
