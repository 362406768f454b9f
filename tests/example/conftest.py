"""The example shop end to end: ``scripts/demo`` from a fresh clone, driven by a real browser.

The slowest tests of the suite (a clone, a fresh virtualenv, two servers):
marked ``e2e``. On the PostgreSQL pass the demo runs on PostgreSQL through
``DATABASE_URL``, with webhooks processed by a django-tasks worker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_databases import new_postgres_database

from .demo_process import Demo, clean_environment, clone_head, port_is_closed, start_demo


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
        env.update(DATABASE_URL=new_postgres_database("shop_demo"), SHOP_TASKS="db")
    running = start_demo(Path(root), env)
    yield running
    status = running.interrupt()
    assert status == 130, running.text()
    assert "Demo stopped." in running.text()
    assert running.leftover_processes() == []
    assert port_is_closed(running.shop_url)
    assert port_is_closed(running.gateway_url)
