"""A new, empty database on the suite's PostgreSQL cluster, for servers a test starts."""

from __future__ import annotations

import os
import uuid


def new_postgres_database(prefix: str) -> str:
    """Create a database on ``PAYCHARGE_TEST_PG_*``'s cluster; returns its ``DATABASE_URL``."""
    import psycopg

    host = os.environ.get("PAYCHARGE_TEST_PG_HOST", "127.0.0.1")
    port = os.environ.get("PAYCHARGE_TEST_PG_PORT", "5432")
    user = os.environ.get("PAYCHARGE_TEST_PG_USER", "postgres")
    password = os.environ.get("PAYCHARGE_TEST_PG_PASSWORD", "")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    dsn = f"host={host} port={port} user={user} dbname=postgres"
    with psycopg.connect(dsn, password=password or None, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    auth = f"{user}:{password}" if password else user
    return f"postgres://{auth}@{host}:{port}/{name}"
