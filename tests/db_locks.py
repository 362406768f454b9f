"""Real database locks for tests: another connection holds what our next write needs."""

from __future__ import annotations

import importlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

from django_paycharge.models import Charge
from tests.waiting import wait_event

#: The store that follows the gateway's yes to a create (what a lock "after the yes" meets).
STORE_AFTER_YES = ("django_paycharge.services.charges.charge_requests", "store_created")


@contextmanager
def locked_database(
    hold: float | None, *, before: tuple[str, str] = STORE_AFTER_YES
) -> Iterator[None]:
    """Another connection locks the charges for ``hold`` s (None: until the block ends).

    Ours won't wait.

    The lock is taken when ``before`` (a module and the name of a function in
    it) is first called, and that call goes on only once the lock is held: the
    write meets it however slow the host is. (A lock taken after a sleep missed
    the write on a busy CI host.)
    """
    module = importlib.import_module(before[0])
    original = getattr(module, before[1])
    go, ready, done = threading.Event(), threading.Event(), threading.Event()

    def first_call_waits_for_the_lock(*args: Any, **kwargs: Any) -> Any:
        if not go.is_set():
            go.set()
            wait_event(ready, "the other connection to take its lock")
        return original(*args, **kwargs)

    def keep(hold: float | None) -> None:
        if hold is None:
            done.wait()  # the block has ended
        else:
            time.sleep(hold)

    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        connection.connection.execute("PRAGMA busy_timeout = 0")  # Django's default shop: 5 s

        def hold_lock() -> None:
            go.wait()
            if done.is_set():
                return
            other = sqlite3.connect(settings["NAME"], isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            ready.set()
            keep(hold)
            other.execute("ROLLBACK")
            other.close()

    else:
        import psycopg

        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '100ms'")

        def hold_lock() -> None:
            go.wait()
            if done.is_set():
                return
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
                keep(hold)

    thread = threading.Thread(target=hold_lock)
    thread.start()
    setattr(module, before[1], first_call_waits_for_the_lock)
    try:
        yield
    finally:
        setattr(module, before[1], original)
        done.set()
        go.set()  # a lock never asked for: the thread ends without taking it
        thread.join()
        if connection.vendor == "sqlite":
            connection.connection.execute("PRAGMA busy_timeout = 20000")
        else:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    assert ready.is_set(), f"{before[1]} was never called: no write met the lock"
