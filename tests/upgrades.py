"""An upgrade tested on an existing install: the database as it was before one migration,
filled through the models of then, then migrated forward.

The migration is found by what it does, not by its number (migrations are renumbered
when branches merge); the database ends at the newest migration whatever the test did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.migrations import Migration
from django.db.migrations.executor import MigrationExecutor

APP = "django_paycharge"


@dataclass
class Upgrade:
    previous: tuple[str, str]
    migration: tuple[str, str]
    apps: Any  # the models as they were before the migration

    def model(self, name: str) -> Any:
        return self.apps.get_model(APP, name)

    def run(self) -> None:
        """Apply the migration (and nothing after it)."""
        MigrationExecutor(connection).migrate([self.migration])


@contextmanager
def before_the_migration(does: Callable[[Migration], bool]) -> Iterator[Upgrade]:
    """The database migrated to just before the one app migration that ``does``."""
    executor = MigrationExecutor(connection)
    (key,) = [
        key for key, migration in executor.loader.disk_migrations.items()
        if key[0] == APP and does(migration)
    ]  # fmt: skip
    (previous,) = [parent.key for parent in executor.loader.graph.node_map[key].parents]
    try:
        executor.migrate([previous])
        yield Upgrade(previous, key, executor.loader.project_state([previous]).apps)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
