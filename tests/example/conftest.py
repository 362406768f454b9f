"""The example shop end to end: ``scripts/demo`` from a fresh clone, driven by a real browser.

The slowest tests of the suite (a clone, a fresh virtualenv, two servers):
marked ``e2e``. On the PostgreSQL pass the demo runs on PostgreSQL through
``DATABASE_URL``, with webhooks processed by a django-tasks worker.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .demo_process import Demo, clean_environment, clone_head, port_is_closed, start_demo


def _postgres_database() -> str:
    """A new, empty database on the suite's PostgreSQL cluster, as a DATABASE_URL."""
    import psycopg

    host = os.environ.get("PAYCHARGE_TEST_PG_HOST", "127.0.0.1")
    port = os.environ.get("PAYCHARGE_TEST_PG_PORT", "5432")
    user = os.environ.get("PAYCHARGE_TEST_PG_USER", "postgres")
    password = os.environ.get("PAYCHARGE_TEST_PG_PASSWORD", "")
    name = f"shop_demo_{uuid.uuid4().hex[:12]}"
    dsn = f"host={host} port={port} user={user} dbname=postgres"
    with psycopg.connect(dsn, password=password or None, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    auth = f"{user}:{password}" if password else user
    return f"postgres://{auth}@{host}:{port}/{name}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """``scripts/demo`` running in a fresh clone, exactly as the docs say, on free ports.

    Stopping it is checked too: Ctrl-C (SIGINT to the script alone) must end
    the script and every process it started, and free both ports.
    """
    base = tmp_path_factory.mktemp("demo")
    root = clone_head(base / "django-paycharge")
    assert not (root / ".venv").exists()
    env = clean_environment(SHOP_PORT="0", GATEWAY_PORT="0", SHOP_DATA_DIR=str(base / "data"))
    if os.environ.get("PAYCHARGE_TEST_DB") == "postgres":
        env.update(DATABASE_URL=_postgres_database(), SHOP_TASKS="db")
    running = start_demo(Path(root), env)
    yield running
    status = running.interrupt()
    assert status == 130, running.text()
    assert "Demo stopped." in running.text()
    assert running.leftover_processes() == []
    assert port_is_closed(running.shop_url)
    assert port_is_closed(running.gateway_url)
