"""The database's limit for the sync benchmark, and what a run costs the machine.

    python -m bench._sync_workers limit [--limit N]

**The limit**: every page is fetched from the fake gateway and converted into
the mirror's rows by the sync's own code (``prepare_page``) *off the clock*
(their CPU is reported apart: what any sync must spend before it writes);
then only the writes are timed, a page per transaction, the same guarded
upsert as the sync (``set_changed``: a stale read never takes a status back):

- PostgreSQL: ``COPY`` of the page into a temporary table, then one
  ``INSERT ... SELECT ... ON CONFLICT (gateway_id) DO UPDATE ... WHERE`` from it
  (the issue's "COPY limit");
- SQLite: one ``executemany`` of the one-row ``INSERT ... ON CONFLICT`` over
  the page's prepared parameters, straight on the driver (``?`` placeholders,
  no Django cursor). SQLite has no ``COPY``; a prepared statement stepped once
  per row, in one transaction, is the fastest way its library offers to load
  rows, and its one connection does nothing else meanwhile.

Its rows are the sync's own, so the two mirrors must come out identical
(:func:`mirror_digest`, which ``bench.sync`` compares).

**CPU**: the client process's (``getrusage``, every thread) and PostgreSQL's
(every process of the throwaway cluster, from ``/proc``: the postmaster's own
and its reaped children's times, plus its live children's; the benchmark is
the cluster's only user).
"""

from __future__ import annotations

import hashlib
import os
import resource
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


def client_cpu() -> float:
    """Seconds of CPU this process has used, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def gateway_cpu() -> float | None:
    """Seconds of CPU of the fake gateway's process (``BENCH_GATEWAY_PID``), or None.

    It shares the machine's cores with the contender: a sync that reads its
    pages on the clock pays for them twice, in its own CPU and in the fake's.
    """
    pid = os.environ.get("BENCH_GATEWAY_PID")
    if not pid:
        return None
    try:
        fields = _stat(int(pid))
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spent(before: float | None, after: float | None) -> float | None:
    """CPU seconds between two readings (None when either is missing)."""
    return None if before is None or after is None else after - before


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def server_cpu() -> float | None:
    """Seconds of CPU of the whole PostgreSQL cluster of Django's connection, or None."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    try:
        postmaster = int(_stat(backend)[1])
        own = _stat(postmaster)
        ticks = sum(int(v) for v in own[11:15])  # utime, stime, cutime, cstime
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    fields = _stat(int(entry.name))
                except (OSError, ValueError):
                    continue  # gone meanwhile: counted in the postmaster's cutime
                if fields[1] == str(postmaster):
                    ticks += int(fields[11]) + int(fields[12])
    except OSError:
        return None  # a server on another host: not measured
    return ticks / _TICK


def mirror_digest() -> str:
    """A digest of every charge row as stored, but for the times the write itself sets."""
    from django.db import connection

    from django_paycharge.models import Charge

    skip = {"id", "synced_at", "first_seen_at"}
    columns = [c for f in Charge._meta.concrete_fields if (c := f.column) and c not in skip]
    table = connection.ops.quote_name(Charge._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    digest = hashlib.sha256()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {names} FROM {table} ORDER BY gateway_id")
        while batch := cursor.fetchmany(1000):
            for row in batch:
                digest.update(repr(row).encode())
    return digest.hexdigest()


def _pages(limit: int) -> tuple[list[Any], float, float]:
    """Every page's prepared rows, fetched and converted by the sync's own code; and the CPU
    seconds of the fetches (request and JSON decoding) and of the conversions."""
    from django_paycharge.services.clients import get_client
    from django_paycharge.services.mirror.upsert import prepare_page

    client = get_client()
    pages, cursor, total = [], None, 0
    fetching = converting = 0.0
    while total < limit:
        started = client_cpu()
        raw = client.charges.fetch_page(limit=100, cursor=cursor, cursor_direction="asc")
        fetched = client_cpu()
        prepared, _rejected = prepare_page(
            raw.items, account="default", keep=lambda _created: True, on_error=_refuse
        )
        fetching, converting = fetching + fetched - started, converting + client_cpu() - fetched
        pages.append(prepared.rows)
        total += len(raw.items)
        if not raw.has_more or not raw.items:
            break
        cursor = raw.cursor
    return pages, fetching, converting


def _refuse(item: Any, error: Exception) -> None:
    raise error


def limit(limit: int) -> dict[str, Any]:
    """Write the pages the database's fastest way; time and count only the writes."""
    from django.db import connection

    pages, fetching, converting = _pages(limit)
    connection.ensure_connection()
    encode, write = page_writer(connection)
    pages_values = [encode(p.values()) for p in pages]
    cpu, db_cpu, gateway = client_cpu(), server_cpu(), gateway_cpu()
    started = time.perf_counter()
    statements = sum(write(values) for values in pages_values)
    seconds = time.perf_counter() - started
    cpu = client_cpu() - cpu
    after = server_cpu()
    gateway = spent(gateway, gateway_cpu())
    rows = sum(len(p) for p in pages)
    return {
        "rows": rows,
        "seconds": seconds,
        "queries": statements,
        "pages": len(pages),
        "counts": {"created": rows},
        "cpu": cpu,
        "db_cpu": spent(db_cpu, after),
        "gateway_cpu": gateway,
        "mirror": mirror_digest(),
        "fetch_cpu": fetching,
        "rows_cpu": converting,
    }


Encode = Callable[[Iterable[dict[str, Any]]], list[Any]]
Write = Callable[[list[Any]], int]


def page_writer(connection: Any) -> tuple[Encode, Write]:
    """The database's fastest write of a page of mirror rows, in two steps: the page's rows
    as the driver's values, then those values written in one transaction (returns the
    statements it ran). Straight on the driver's own connection, in autocommit."""
    return (_postgresql if connection.vendor == "postgresql" else _sqlite)(connection)


def _postgresql(connection: Any) -> tuple[Encode, Write]:
    from django_paycharge.models import Charge
    from django_paycharge.models.payload import PayloadEncoder
    from django_paycharge.services.mirror import postgresql as pg
    from django_paycharge.services.mirror.rows import INSERT_COLUMNS, set_changed

    conn = connection.connection  # psycopg's own
    table = connection.ops.quote_name(Charge._meta.db_table)
    cols = ", ".join(f'"{c}"' for c in INSERT_COLUMNS)
    conn.autocommit = False
    with conn.cursor() as cur:
        cur.execute(
            f"CREATE TEMP TABLE bench_page ON COMMIT DELETE ROWS AS "
            f"SELECT {cols} FROM {table} WITH NO DATA"
        )
    conn.commit()
    upsert = (
        f"INSERT INTO {table} ({cols}) SELECT {cols} FROM bench_page "
        f"ON CONFLICT (gateway_id) {set_changed(table, pg._quoted)}"
    )
    copy = f"COPY bench_page ({cols}) FROM STDIN"
    json_text = PayloadEncoder(separators=(",", ":")).encode  # the JSON columns', as the field's

    def value(v: Any) -> Any:
        return json_text(v) if isinstance(v, dict | list) else v

    def encode(rows: Iterable[dict[str, Any]]) -> list[Any]:
        return [[value(row[c]) for c in INSERT_COLUMNS] for row in rows]

    def write(values: list[Any]) -> int:
        with conn.cursor() as cur:
            with cur.copy(copy) as out:
                for row in values:
                    out.write_row(row)
            cur.execute(upsert)
        conn.commit()
        return 2

    return encode, write


def _sqlite(connection: Any) -> tuple[Encode, Write]:
    from django_paycharge.models import Charge
    from django_paycharge.services.mirror import sqlite as lite
    from django_paycharge.services.mirror.rows import INSERT_COLUMNS, set_changed

    encode_row = lite.row_encoder(connection)
    table = connection.ops.quote_name(Charge._meta.db_table)
    cols = ", ".join(f'"{c}"' for c in INSERT_COLUMNS)
    marks = ", ".join(["?"] * len(INSERT_COLUMNS))
    upsert = (
        f"INSERT INTO {table} ({cols}) VALUES ({marks}) "
        f"ON CONFLICT (gateway_id) {set_changed(table, lite._quoted)}"
    )
    conn = connection.connection  # the sqlite3 driver's own
    conn.isolation_level = None  # BEGIN and COMMIT as written below

    def encode(rows: Iterable[dict[str, Any]]) -> list[Any]:
        return [encode_row(row) for row in rows]

    def write(values: list[Any]) -> int:
        conn.execute("BEGIN")
        conn.executemany(upsert, values)
        conn.execute("COMMIT")
        return 1

    return encode, write
